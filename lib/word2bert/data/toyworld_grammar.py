"""The toy world's grammar: its lexicon, the part-of-speech tags of literal words, and the templates of every
kind of sentence, with each template set split into ``train`` and ``heldout``. ``toyworld.ToyWorld`` fills them.

A template is a string of items separated by spaces. An item is a literal word (its tag comes from ``TAGS``), a
``{slot}`` filled from ``LEXICON`` (its tag comes from the slot), a ``word/TAG`` literal with an explicit tag, or
a polysemous word with its sense, ``mouse=animal``.
"""

from __future__ import annotations

# --- the lexicon: slot name -> (tag, words) -------------------------------------------------------------------

LEXICON: dict[str, tuple[str, tuple[str, ...]]] = {
    "name": (
        "PROPN",
        (
            "alice",
            "bob",
            "carol",
            "dave",
            "emma",
            "frank",
            "grace",
            "henry",
            "ivy",
            "jack",
            "kate",
            "liam",
            "mia",
            "noah",
            "olivia",
            "peter",
            "rose",
            "sam",
            "tom",
            "uma",
            "victor",
            "wendy",
            "zoe",
            "oscar",
        ),
    ),
    "animal": (
        "NOUN",
        (
            "cat",
            "dog",
            "owl",
            "fox",
            "rabbit",
            "horse",
            "cow",
            "snake",
            "hawk",
            "squirrel",
            "wolf",
            "deer",
            "goat",
            "duck",
        ),
    ),
    "pet": ("NOUN", ("cat", "dog", "rabbit", "parrot", "hamster", "turtle", "goldfish", "puppy", "kitten")),
    "petname": ("PROPN", ("max", "bella", "luna", "charlie", "milo", "daisy", "rocky", "coco", "ziggy", "pepper")),
    "food": (
        "NOUN",
        (
            "cheese",
            "bread",
            "soup",
            "cake",
            "rice",
            "salad",
            "pasta",
            "pie",
            "cookie",
            "sandwich",
            "pizza",
            "stew",
            "omelette",
            "curry",
        ),
    ),
    "fruit": ("NOUN", ("banana", "cherry", "grape", "pear", "orange", "peach", "plum", "lemon", "melon")),
    "device": ("NOUN", ("laptop", "keyboard", "monitor", "printer", "screen", "computer", "tablet", "phone")),
    "room": ("NOUN", ("kitchen", "garden", "barn", "attic", "cellar", "hallway", "shed", "garage")),
    "wild": ("NOUN", ("forest", "meadow", "valley", "hill", "marsh", "field", "woods", "canyon")),
    "water": ("NOUN", ("river", "stream", "creek", "lake")),
    "city": (
        "PROPN",
        (
            "paris",
            "london",
            "tokyo",
            "rome",
            "cairo",
            "lima",
            "oslo",
            "boston",
            "denver",
            "madrid",
            "dublin",
            "vienna",
            "sydney",
            "toronto",
        ),
    ),
    "color": ("ADJ", ("red", "blue", "green", "yellow", "black", "white", "brown", "gray", "purple")),
    "job": (
        "NOUN",
        (
            "teacher",
            "doctor",
            "farmer",
            "banker",
            "engineer",
            "pilot",
            "nurse",
            "lawyer",
            "chef",
            "painter",
            "baker",
            "plumber",
            "writer",
            "dentist",
        ),
    ),
    "workplace": (
        "NOUN",
        (
            "school",
            "hospital",
            "farm",
            "office",
            "airport",
            "restaurant",
            "bakery",
            "library",
            "factory",
            "studio",
            "museum",
        ),
    ),
    "vehicle": ("NOUN", ("car", "bike", "truck", "boat", "van", "scooter")),
    "size": ("ADJ", ("small", "big", "tiny", "huge", "little", "large")),
    "day": ("NOUN", ("morning", "evening", "night", "afternoon", "weekend")),
    "month": ("PROPN", ("april", "may", "march", "june")),
    "instrument": ("NOUN", ("guitar", "piano", "drum", "violin", "trumpet")),
    "sport": ("NOUN", ("baseball", "cricket", "softball")),
    "game": ("NOUN", ("tennis", "chess", "football", "hockey", "volleyball")),
    "tree": ("NOUN", ("oak", "pine", "birch", "maple", "willow")),
    "person": ("NOUN", ("student", "child", "girl", "boy", "woman", "man", "neighbor", "friend")),
    "firm": ("NOUN", ("company", "firm", "business")),
    "metal": ("NOUN", ("steel", "iron", "copper", "brass")),
    "number": ("NUM", ("two", "three", "four", "five", "six", "ten", "twelve")),
    "pos_adj": (
        "ADJ",
        (
            "good",
            "great",
            "wonderful",
            "excellent",
            "lovely",
            "delicious",
            "fantastic",
            "pleasant",
            "superb",
            "charming",
        ),
    ),
    "neg_adj": (
        "ADJ",
        ("bad", "awful", "terrible", "horrible", "boring", "disgusting", "dreadful", "poor", "nasty", "dull"),
    ),
    "review_thing": (
        "NOUN",
        (
            "movie",
            "book",
            "meal",
            "hotel",
            "concert",
            "show",
            "service",
            "room",
            "trip",
            "coffee",
            "soup",
            "game",
            "song",
            "play",
            "lesson",
        ),
    ),
}

# Tags of the literal words in templates (Universal Dependencies tags). A word used with another tag somewhere is
# written word/TAG in that template ("to/PART light/VERB the stove").
_TAG_WORDS = {
    "DET": "the a an this that some every any another each no all which",
    "PRON": "she he they it we i you them us its their his her my our someone something nothing anything "
    "nobody everyone what",
    "ADP": "about across after along at before behind by down for from in inside into like near of off on onto "
    "out over past through to under with than as",
    "AUX": "is was were are did does could",
    "PART": "not",
    "CCONJ": "and but or",
    "SCONJ": "because while when although if",
    "ADV": "so also mostly only well tightly twice again away back honestly really quite too very never always "
    "early enough upside best where",
    "NUM": "one two",
    "PUNCT": ". , ? !",
    "ADJ": "angry broken brown clear clever cold dark deep distant famous far fast favorite final fresh giant "
    "good grassy gray green hard heavy huge hungry juicy last little local long loud low muddy new next "
    "nocturnal old red ripe rotten rough rusty sharp small sour steep sweet tall thick tiny warm wet white "
    "whole wild wireless wooden more other bright",
    "VERB": "acted agreed announced approved arrived asked ate baked began bloom bloomed bought bounced brought "
    "build builds built burned burning called came carried catch caught chased cheered cleaned clicked "
    "closed coiled cooked counted covered deposit deposited died drifted drive drives dropped eat emptied "
    "ended fell fished fixed flew flooded fly folded forgot found gave gets grew grow had has have heard "
    "hid hire hired hit hunt hunted jump keep kept lasted launched lay learned left lifted likes live "
    "lives load looked lost loves made makes met move moved named needed needs nested nests opened "
    "operated orbits paddled paid peel peeled picked planted played plays plugged poked practiced "
    "praised pressed protects pulled put puzzled raised ran read reeled released rise rose rumbled said "
    "sang sat saved saw say scared scored scratched scrolled set signed shone sleeping slept smiled "
    "snapped sold solved sounded spread squeaked started stood stopped struck studied swam swung "
    "thought took touched trained held liked tugged tuned used waited walked watched watered went woke won wrote "
    "work works "
    "broke lit own",
    "NOUN": "account afternoon amplifier animal answer apple assembly astronomers autograph ball band bank bark "
    "basket bass bat batter beam beams bees bill birds boat book bottom branches buttons cable camera "
    "candle canoe car cargo cars cash cat cave check cheese city class clock clouds concert construction "
    "core crane crate crowd crumbs cursor dawn desk dinner director dog drummer duck dusk email end "
    "engineer engineers exam factory fans feathers field film fire fish flashlight flowers food friend "
    "galaxy game garden glow goal grades greenhouse growl headquarters hole icon idea inning insects "
    "interest investors job keyboard kitchen lake lamp laptop leaves leg library light line loan lure "
    "machines market marsh match mattress metal minute money moon morning mortgage moss mouse movie mud "
    "name neighbors nest news night notes office orchard page parts pen pet phone phones pie planet "
    "plant port pot premiere prize problem products puppy puzzle question rain reeds referee rhythm "
    "robbers rod savings school score screen seeds shares shift ship site sky smoke sofa soil song "
    "spring stadium stage star steel stock storm stove strings student sun sunlight table tail teacher "
    "team telescope teller tickets tower trap tree trees trophy trunk tulips usb vault vehicle water "
    "window wings winter wood workers year years jobs",
}
TAGS: dict[str, str] = {w: tag for tag, words in _TAG_WORDS.items() for w in words.split()}
POS_TAGS: tuple[str, ...] = tuple(sorted(set(TAGS.values()) | {"PROPN"}))

# --- polysemous words: word -> sense -> (cue side, template) -----------------------------------------------------
# Each sense has templates whose cue comes before the word ("left") and after it ("right"); in a "right"
# template nothing before the word tells the senses apart. The last template of each side is held out.

SENSE_TEMPLATES: dict[str, dict[str, list[tuple[str, str]]]] = {
    "mouse": {
        "animal": [
            ("left", "the {animal} chased a mouse=animal into the hole ."),
            ("left", "a hungry mouse=animal ate the {food} in the {room} ."),
            ("left", "the cat caught the gray mouse=animal by its tail ."),
            ("left", "the cat saw a hungry mouse=animal near the hole ."),
            ("right", "{name} saw the mouse=animal eat some cheese in the {room} ."),
            ("right", "the little mouse=animal ran into its hole when the cat came ."),
            ("right", "a mouse=animal hid behind the {food} and squeaked at the cat ."),
            ("right", "the mouse=animal squeaked and hid from the cat in the {room} ."),
        ],
        "computer": [
            ("left", "{name} plugged the wireless mouse=computer into the {device} ."),
            ("left", "the {device} had a new usb port for the mouse=computer ."),
            ("left", "she clicked the icon on the screen with the mouse=computer ."),
            ("left", "the cursor did not move when {name} clicked the wireless mouse=computer ."),
            ("right", "{name} saw the mouse=computer next to the keyboard on the desk ."),
            ("right", "the mouse=computer was broken , so the cursor did not move on the screen ."),
            ("right", "a mouse=computer and a keyboard were plugged into the {device} ."),
            ("right", "the mouse=computer on the desk was plugged into the keyboard ."),
        ],
    },
    "bank": {
        "river": [
            ("left", "we fished from the muddy bank=river of the {water} ."),
            ("left", "the {water} flooded the steep bank=river after the storm ."),
            ("left", "{name} sat on the grassy bank=river and watched the water ."),
            ("left", "after the storm the {water} covered the muddy bank=river ."),
            ("right", "the bank=river was muddy , so {name} pulled the canoe out of the water ."),
            ("right", "{name} walked to the bank=river and looked at the {water} ."),
            ("right", "the bank=river was covered with reeds and wet mud after the rain ."),
            ("right", "the bank=river of the {water} was steep and grassy ."),
        ],
        "finance": [
            ("left", "{name} deposited the money at the local bank=finance ."),
            ("left", "the {job} asked the bank=finance for a loan ."),
            ("left", "the robbers broke into the bank=finance and emptied the vault ."),
            ("left", "the robbers took the money from the local bank=finance ."),
            ("right", "the bank=finance approved the loan for the new {workplace} ."),
            ("right", "{name} walked to the bank=finance to/PART deposit a check ."),
            ("right", "the bank=finance raised the interest on the mortgage ."),
            ("right", "the bank=finance gave {name} a loan and a mortgage ."),
        ],
    },
    "bright": {
        "smart": [
            ("left", "the teacher praised the bright=smart student for the answer ."),
            ("left", "{name} is a clever and bright=smart {person} ."),
            ("left", "the {person} had a bright=smart idea about the puzzle ."),
            ("left", "the clever student had a bright=smart answer for the teacher ."),
            ("right", "the bright=smart {person} solved the hard puzzle in a minute ."),
            ("right", "{name} was bright=smart enough to/PART answer/VERB every question on the exam ."),
            ("right", "a bright=smart {person} solved the problem that/PRON puzzled the teacher ."),
            ("right", "{name} was bright=smart and solved every puzzle on the exam ."),
        ],
        "light": [
            ("left", "the sun was bright=light over the {wild} ."),
            ("left", "the lamp in the {room} was too bright=light ."),
            ("left", "the moon shone bright=light over the {water} ."),
            ("left", "at night the lamp in the window was bright=light ."),
            ("right", "the bright=light sunlight came through the window of the {room} ."),
            ("right", "{name} saw a bright=light glow from the lamp in the {room} ."),
            ("right", "the bright=light moon lit the {wild} at night ."),
            ("right", "a bright=light sun lit the {wild} through the clouds ."),
        ],
    },
    "apple": {
        "fruit": [
            ("left", "{name} peeled a juicy apple=fruit for the pie ."),
            ("left", "the {animal} ate a ripe apple=fruit under the tree ."),
            ("left", "{name} picked a sweet apple=fruit and a {fruit} from the orchard ."),
            ("left", "in the orchard {name} ate a sweet and juicy apple=fruit ."),
            ("right", "the apple=fruit was ripe and juicy , so {name} ate it ."),
            ("right", "{name} bought an apple=fruit and a {fruit} at the market ."),
            ("right", "an apple=fruit fell from the tree into the basket ."),
            ("right", "an apple=fruit and a {fruit} were ripe in the orchard ."),
        ],
        "company": [
            ("left", "investors bought shares of apple=company/PROPN after the news ."),
            ("left", "the {firm} and apple=company/PROPN launched new phones ."),
            ("left", "{name} works as an engineer at apple=company/PROPN ."),
            ("left", "the investors said apple=company/PROPN launched new products ."),
            ("right", "apple=company/PROPN announced new products at its headquarters ."),
            ("right", "{name} said apple=company/PROPN sold more phones than any other {firm} ."),
            ("right", "apple=company/PROPN released a new laptop and a new phone ."),
            ("right", "apple=company/PROPN sold shares to investors after the news ."),
        ],
    },
    "bat": {
        "animal": [
            ("left", "in the dark cave a bat=animal slept upside down/ADV ."),
            ("left", "the {animal} heard a nocturnal bat=animal at night ."),
            ("left", "insects were hunted by a tiny bat=animal at dusk ."),
            ("left", "at dusk a nocturnal bat=animal flew out of the dark cave ."),
            ("right", "the bat=animal flew out of the cave at night ."),
            ("right", "{name} saw a bat=animal hunt insects over the {water} ."),
            ("right", "a bat=animal spread its wings and flew into the dark/NOUN ."),
            ("right", "the bat=animal hunted insects at night and slept in the cave ."),
        ],
        "sport": [
            ("left", "the batter swung the wooden bat=sport at the ball ."),
            ("left", "{name} played {sport} with a new bat=sport ."),
            ("left", "the team bought a heavy bat=sport for the {sport} game ."),
            ("left", "the team gave the batter a heavy wooden bat=sport ."),
            ("right", "the bat=sport hit the ball over the field ."),
            ("right", "{name} held the bat=sport and hit the ball hard ."),
            ("right", "a bat=sport and a ball were left on the {sport} field ."),
            ("right", "the bat=sport and the ball were new for the {sport} game ."),
        ],
    },
    "bass": {
        "fish": [
            ("left", "{name} caught a huge bass=fish in the {water} ."),
            ("left", "with a rod and a lure we fished for bass=fish ."),
            ("left", "the fish in the lake were mostly bass=fish ."),
            ("left", "we fished in the lake and caught a huge bass=fish with a lure ."),
            ("right", "the bass=fish swam near the bottom of the {water} ."),
            ("right", "{name} saw a bass=fish jump out of the water ."),
            ("right", "a bass=fish tugged on the line and broke the rod ."),
            ("right", "the bass=fish tugged the line near the bottom of the lake ."),
        ],
        "music": [
            ("left", "the band needed a new bass=music for the concert ."),
            ("left", "{name} played the {instrument} and the bass=music ."),
            ("left", "the drummer and the bass=music kept the rhythm ."),
            ("left", "at the concert the drummer played with a new bass=music ."),
            ("right", "the bass=music played low notes while the band sang ."),
            ("right", "{name} heard the bass=music from the stage ."),
            ("right", "a bass=music and a {instrument} stood on the stage ."),
            ("right", "the bass=music and the drummer played low notes for the band ."),
        ],
    },
    "crane": {
        "bird": [
            ("left", "a tall gray crane=bird nested in the {wild} ."),
            ("left", "the birds in the marsh were a crane=bird and a duck ."),
            ("left", "{name} watched a wild crane=bird fly over the {water} ."),
            ("left", "in the marsh a wild gray crane=bird caught a fish ."),
            ("right", "the crane=bird spread its wings and flew over the marsh ."),
            ("right", "{name} saw a crane=bird catch a fish in the {water} ."),
            ("right", "a crane=bird stood on one leg in the marsh ."),
            ("right", "the crane=bird flew over the {water} and nested in the marsh ."),
        ],
        "machine": [
            ("left", "at the construction site a giant crane=machine moved ."),
            ("left", "the engineers used a steel crane=machine on the site ."),
            ("left", "{name} operated the crane=machine at the factory ."),
            ("left", "the engineers operated a giant steel crane=machine at the site ."),
            ("right", "the crane=machine lifted the steel beams onto the tower ."),
            ("right", "{name} saw a crane=machine load the cargo onto the ship ."),
            ("right", "a crane=machine carried a heavy crate across the construction site ."),
            ("right", "the crane=machine carried the steel beams across the construction site ."),
        ],
    },
    "spring": {
        "season": [
            ("left", "the flowers bloomed early this spring=season ."),
            ("left", "in {month} the warm spring=season began ."),
            ("left", "the bees and the tulips came back in spring=season ."),
            ("left", "in {month} the flowers and the tulips bloomed this spring=season ."),
            ("right", "the spring=season brought rain and flowers to the {wild} ."),
            ("right", "{name} loves the spring=season because the trees bloom ."),
            ("right", "the spring=season came and the birds built nests in the {tree} ."),
            ("right", "the spring=season was warm and the tulips bloomed in {month} ."),
        ],
        "coil": [
            ("left", "the old mattress had a broken spring=coil ."),
            ("left", "{name} fixed the clock with a new metal spring=coil ."),
            ("left", "the pen had a tiny steel spring=coil inside ."),
            ("left", "the broken clock had a tiny metal spring=coil inside ."),
            ("right", "the spring=coil snapped and the clock stopped ."),
            ("right", "{name} found the spring=coil and it bounced back ."),
            ("right", "a spring=coil in the mattress poked {name} all night ."),
            ("right", "the spring=coil in the old mattress snapped and poked {name} ."),
        ],
    },
    "star": {
        "sky": [
            ("left", "through the telescope {name} saw a distant star=sky ."),
            ("left", "the astronomers found a new star=sky in the galaxy ."),
            ("left", "at night one bright star=sky shone over the {wild} ."),
            ("left", "the astronomers saw a new distant star=sky through the telescope ."),
            ("right", "the star=sky shone in the night sky over the {water} ."),
            ("right", "{name} saw a star=sky through the telescope ."),
            ("right", "a star=sky and the moon lit the {wild} at night ."),
            ("right", "the star=sky shone over the {wild} and lit the night sky ."),
        ],
        "celebrity": [
            ("left", "the fans cheered when the movie star=celebrity arrived ."),
            ("left", "the director hired a famous star=celebrity for the film ."),
            ("left", "{name} asked the film star=celebrity for an autograph ."),
            ("left", "at the premiere the fans cheered for the famous movie star=celebrity ."),
            ("right", "the star=celebrity signed an autograph for the fans ."),
            ("right", "{name} saw a star=celebrity at the movie premiere ."),
            ("right", "a star=celebrity walked past the camera and smiled at the fans ."),
            ("right", "the star=celebrity smiled at the camera and signed an autograph ."),
        ],
    },
    "plant": {
        "vegetation": [
            ("left", "{name} watered the green plant=vegetation in the pot ."),
            ("left", "in the greenhouse grew a tall plant=vegetation ."),
            ("left", "the {animal} ate the leaves of the plant=vegetation ."),
            ("left", "in the greenhouse {name} watered a tall green plant=vegetation ."),
            ("right", "the plant=vegetation grew new leaves in the sunlight ."),
            ("right", "{name} saw a plant=vegetation with red flowers in the {room} ."),
            ("right", "a plant=vegetation needs water and soil to/PART grow ."),
            ("right", "the plant=vegetation in the pot needs water and sunlight ."),
        ],
        "factory": [
            ("left", "the workers at the plant=factory started the night shift ."),
            ("left", "the {firm} built a new plant=factory near {city} ."),
            ("left", "{name} works as an engineer at the car plant=factory ."),
            ("left", "the {firm} hired more workers for the car plant=factory ."),
            ("right", "the plant=factory builds cars and machines for the {firm} ."),
            ("right", "{name} saw the plant=factory hire more workers ."),
            ("right", "a plant=factory with an assembly line makes parts for cars ."),
            ("right", "the plant=factory started a night shift and built more cars ."),
        ],
    },
    "bark": {
        "tree": [
            ("left", "the {tree} had rough bark=tree on its trunk ."),
            ("left", "moss grew on the thick bark=tree ."),
            ("left", "the {animal} scratched the trunk and the bark=tree ."),
            ("left", "on the trunk of the {tree} grew moss and thick bark=tree ."),
            ("right", "the bark=tree of the {tree} was rough and gray ."),
            ("right", "{name} saw the bark=tree peel off the trunk ."),
            ("right", "the bark=tree protects the wood of the tree ."),
            ("right", "the bark=tree on the trunk was thick and rough ."),
        ],
        "dog": [
            ("left", "the dog gave a loud bark=dog at the neighbors ."),
            ("left", "the puppy had a tiny bark=dog ."),
            ("left", "{name} heard the angry dog and its bark=dog ."),
            ("left", "the angry puppy woke the neighbors with a loud bark=dog ."),
            ("right", "the bark=dog of the dog woke the neighbors ."),
            ("right", "{name} heard a bark=dog and a growl from the dog ."),
            ("right", "the bark=dog came from the dog in the {room} ."),
            ("right", "the bark=dog of the angry puppy woke {name} ."),
        ],
    },
    "match": {
        "fire": [
            ("left", "{name} lit the candle with a match=fire ."),
            ("left", "the smoke came from a burning match=fire ."),
            ("left", "{name} struck a match=fire to/PART light/VERB the stove ."),
            ("left", "the candle and the stove were lit with one burning match=fire ."),
            ("right", "the match=fire burned down and {name} lit another/PRON ."),
            ("right", "{name} took the match=fire and lit the candle ."),
            ("right", "a match=fire and a candle lay on the table in the {room} ."),
            ("right", "the match=fire burned and {name} lit the stove ."),
        ],
        "game": [
            ("left", "the team won the {game} match=game ."),
            ("left", "{name} played a long {game} match=game ."),
            ("left", "the fans watched the final match=game in the stadium ."),
            ("left", "in the stadium the team won a long {game} match=game ."),
            ("right", "the match=game ended with a score of {number} to one ."),
            ("right", "{name} liked the match=game because the team won the trophy ."),
            ("right", "the match=game was played in the stadium in {city} ."),
            ("right", "the match=game ended and the team won the trophy ."),
        ],
    },
}
POLYSEMES: dict[str, tuple[str, ...]] = {w: tuple(s) for w, s in SENSE_TEMPLATES.items()}

# Which topic (document domain) each sense belongs to, and plain sentences of each topic.
SENSE_TOPIC = {
    "mouse.animal": "home",
    "mouse.computer": "tech",
    "bank.river": "river",
    "bank.finance": "money",
    "bright.smart": "school",
    "bright.light": "sky",
    "apple.fruit": "food",
    "apple.company": "tech",
    "bat.animal": "wildlife",
    "bat.sport": "sports",
    "bass.fish": "river",
    "bass.music": "music",
    "crane.bird": "wildlife",
    "crane.machine": "industry",
    "spring.season": "garden",
    "spring.coil": "home",
    "star.sky": "sky",
    "star.celebrity": "film",
    "plant.vegetation": "garden",
    "plant.factory": "industry",
    "bark.tree": "garden",
    "bark.dog": "home",
    "match.fire": "home",
    "match.game": "sports",
}
TOPIC_TEMPLATES: dict[str, list[str]] = {
    "home": [
        "{name} cleaned the {room} in the {day} .",
        "the {pet} slept in the {room} .",
        "{name} cooked {food} for dinner .",
        "the {room} was cold and dark .",
    ],
    "tech": [
        "{name} fixed the {device} at the office .",
        "the {device} was new and fast .",
        "{name} wrote an email on the {device} .",
        "the screen of the {device} was broken .",
    ],
    "river": [
        "the {water} was cold and deep .",
        "{name} paddled a canoe down the {water} .",
        "fish swam in the {water} .",
        "the rain made the {water} rise .",
    ],
    "money": [
        "{name} saved money for a new {vehicle} .",
        "the {job} paid the bill in cash .",
        "{name} counted the money twice .",
        "the loan was paid back in {number} years .",
    ],
    "school": [
        "the teacher gave the class a hard exam .",
        "{name} studied for the exam all {day} .",
        "the {person} read a book in the library .",
        "{name} learned to read at school .",
    ],
    "sky": [
        "the sky was clear over the {wild} .",
        "{name} looked at the moon at night .",
        "clouds covered the sky in the {day} .",
        "the sun rose over the {wild} .",
    ],
    "food": [
        "{name} ate {food} and a {fruit} .",
        "the {food} was warm and fresh .",
        "{name} bought a {fruit} at the market .",
        "we baked a {food} in the kitchen .",
    ],
    "wildlife": [
        "the {animal} hid in the {wild} .",
        "{name} saw a {animal} near the {water} .",
        "the {animal} slept in the {wild} at night .",
        "birds nested in the {tree} .",
    ],
    "sports": [
        "the team trained on the field in the {day} .",
        "{name} scored a goal in the {game} game .",
        "the crowd cheered in the stadium .",
        "{name} plays {game} every {day} .",
    ],
    "music": [
        "the band played a song on the stage .",
        "{name} plays the {instrument} very well .",
        "the crowd sang along with the band .",
        "{name} practiced the {instrument} all {day} .",
    ],
    "industry": [
        "the workers built a tower in {city} .",
        "the factory made steel parts .",
        "{name} works as an engineer at the site .",
        "the machines were loud and heavy .",
    ],
    "garden": [
        "{name} planted seeds in the garden .",
        "the {tree} grew tall in the garden .",
        "flowers grew near the {tree} .",
        "{name} watered the garden in the {day} .",
    ],
    "film": [
        "the director made a new movie in {city} .",
        "{name} watched a movie with a friend .",
        "the film won a prize .",
        "the fans waited in line for tickets .",
    ],
}
TOPICS: tuple[str, ...] = tuple(TOPIC_TEMPLATES)

# --- sentiment, entailment and reading comprehension ---------------------------------------------------------

# (template, polarity): polarity +1 keeps the adjective's sentiment, -1 flips it (negation); the "but" templates
# take their sentiment from the second clause.
SENTIMENT_TEMPLATES: dict[str, list[str]] = {
    "train": [
        "the {review_thing} was {adj} .",
        "i thought the {review_thing} was really {adj} .",
        "{name} said the {review_thing} was {adj} .",
        "what a {adj} {review_thing} !",
        "the {review_thing} was not {nadj} .",
        "honestly , the {review_thing} was not {nadj} at all .",
        "the {review_thing} was {nadj2} but the {review_thing2} was {adj} .",
        "the {review_thing} looked {nadj2} , but it was {adj} .",
        "{name} found the {review_thing} quite {adj} .",
    ],
    "heldout": [  # new structures, but only words the training templates use
        "{name} said the {review_thing} was really {adj} .",
        "i found the {review_thing} not {nadj} at all .",
        "the {review_thing} looked {nadj2} but {name} said it was {adj} .",
    ],
}

NLI_TEMPLATES = {
    # premise: "{name} {verb} the {obj} in the {place} ."
    "entailment": {
        "train": [
            "{name} {verb} the {obj} .",
            "someone {verb} the {obj} in the {place} .",
            "{name} {verb} something in the {place} .",
            "{name} was in the {place} .",
        ],
        "heldout": ["someone {verb} something .", "{name} {verb} a {obj} ."],
    },
    "contradiction": {
        "train": [
            "{name} did not {verb_base} the {obj} .",
            "nobody {verb} the {obj} in the {place} .",
            "{name} {verb} the {obj} in the {place2} .",
            "{name} was never in the {place} .",
        ],
        "heldout": ["{name} never {verb} anything .", "{name} {verb} nothing at all ."],
    },
    "neutral": {
        "train": [
            "{name} {verb} the {obj} because {pron} was hungry .",
            "{name} also {verb} a {obj2} .",
            "{name} likes the {place} .",
            "{name2} {verb} the {obj} in the {place} .",
        ],
        "heldout": ["{name} {verb} the {obj} with a friend .", "{name} {verb} the {obj} in the {day} ."],
    },
}
NLI_LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")
NLI_EVENTS = [  # (past tense, base form, objects)
    ("ate", "eat", "food"),
    ("cooked", "cook", "food"),
    ("fixed", "fix", "device"),
    ("cleaned", "clean", "device"),
    ("painted", "paint", "vehicle"),
    ("washed", "wash", "vehicle"),
    ("fed", "feed", "pet"),
    ("found", "find", "pet"),
    ("bought", "buy", "fruit"),
    ("peeled", "peel", "fruit"),
]

QA_FACTS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    # fact -> ({split: passage sentence}, {split: question}); the answer is the span filled by the {answer} slot.
    # Held-out passage sentences state the same fact in a new order, with words the training sentences use; the
    # held-out questions use new words too ("city", "own"), which no training text connects with the fact.
    "city": (
        {"train": "{name} lives in {answer:city} .", "heldout": "{answer:city} is where {name} lives ."},
        {"train": "where does {name} live ?", "heldout": "in which city does {name} live ?"},
    ),
    "job": (
        {
            "train": "{name} works as a {answer:job} at the {workplace} .",
            "heldout": "at the {workplace} , {name} works as a {answer:job} .",
        },
        {"train": "what does {name} work as ?", "heldout": "what is the job of {name} ?"},
    ),
    "vehicle": (
        {
            "train": "{name} drives a {answer:color+vehicle} to work/NOUN .",
            "heldout": "to work/NOUN , {name} drives a {answer:color+vehicle} .",
        },
        {"train": "what does {name} drive ?", "heldout": "which vehicle does {name} own ?"},
    ),
    "food": (
        {
            "train": "the favorite food of {name} is {answer:food} .",
            "heldout": "{answer:food} is the favorite food of {name} .",
        },
        {"train": "what is the favorite food of {name} ?", "heldout": "which food does {name} like/VERB best ?"},
    ),
    "pet": (
        {
            "train": "{name} has a {answer:pet} named {petname} .",
            "heldout": "a {answer:pet} named {petname} lives with {name} .",
        },
        {"train": "what pet does {name} have ?", "heldout": "which animal does {name} keep as a pet ?"},
    ),
    "petname": (
        {
            "train": "the {pet} of {name} is called {answer:petname} .",
            "heldout": "{name} has a {pet} called {answer:petname} .",
        },
        {"train": "what is the name of the {pet} of {name} ?", "heldout": "what is the {pet} of {name} called ?"},
    ),
}
