"""Plain sentences written for the course, two senses of twelve everyday words, six sentences each: the
second, smaller real-English sense set, in the style of "your mouse likes cheese" and "buy a new mouse for
your computer". No corpus holds them; each sentence has the word once, as a whole token."""

from __future__ import annotations

from .toyworld import SenseOccurrence
from .vocab import tokenize

PLAIN_SENSES: dict[str, dict[str, list[str]]] = {
    "mouse": {
        "animal": [
            "the mouse ran under the kitchen door",
            "a small grey mouse was eating the crumbs",
            "our cat caught a mouse in the garden",
            "she heard a mouse scratching inside the wall",
            "the farmer set a trap for the mouse in the barn",
            "a field mouse builds its nest in the tall grass",
        ],
        "device": [
            "click the left button of the mouse twice",
            "my wireless mouse needs new batteries",
            "move the mouse to the top of the screen",
            "he plugged the mouse into the laptop",
            "the mouse stopped working after the update",
            "she bought a new mouse and keyboard for the office",
        ],
    },
    "apple": {
        "fruit": [
            "she cut the apple into thin slices",
            "he picked a red apple from the tree",
            "the apple was sweet and crisp",
            "we baked an apple pie for dinner",
            "there is a green apple in my lunch box",
            "the horse ate the apple from her hand",
        ],
        "company": [
            "apple released a new phone this autumn",
            "he has worked at apple for ten years",
            "the apple store was full of customers",
            "apple makes laptops and tablets",
            "shares of apple rose after the announcement",
            "she paid for her coffee with her apple watch",
        ],
    },
    "bank": {
        "river": [
            "we sat on the bank of the river and fished",
            "the boat drifted toward the muddy bank",
            "flowers grew along the bank of the stream",
            "the children ran down the grassy bank to the water",
            "the river flooded over its bank after the storm",
            "a heron stood still on the far bank",
        ],
        "money": [
            "she opened an account at the bank",
            "the bank lent them money for the house",
            "he went to the bank to deposit his salary",
            "the bank closes at five on fridays",
            "the bank raised its interest rates again",
            "i need to call my bank about the card",
        ],
    },
    "bat": {
        "animal": [
            "a bat flew out of the cave at dusk",
            "the bat hung upside down from the roof",
            "this bat eats insects at night",
            "a bat uses echoes to find its way in the dark",
            "they saw a bat circling above the lake",
            "the little bat slept through the winter",
        ],
        "sport": [
            "he swung the bat and hit the ball",
            "she bought a new cricket bat",
            "the player dropped his bat and ran to first base",
            "a wooden bat is heavier than a metal one",
            "hold the bat with both hands",
            "the bat cracked when it struck the ball",
        ],
    },
    "bark": {
        "dog": [
            "the dog let out a loud bark at the stranger",
            "we heard a bark from the yard next door",
            "his bark is worse than his bite",
            "the puppy gave a tiny bark and wagged its tail",
            "a sharp bark woke the whole house",
            "the bark of the guard dog scared the thief",
        ],
        "tree": [
            "the bark of the old oak was rough and thick",
            "deer had stripped the bark from the young trees",
            "the medicine is made from the bark of a willow",
            "she peeled a strip of bark off the birch",
            "moss grew on the bark of the pine",
            "beetles live under the bark of dead trees",
        ],
    },
    "plant": {
        "flora": [
            "water the plant on the windowsill every week",
            "this plant needs a lot of sunlight",
            "the tomato plant grew taller than the fence",
            "she gave me a plant for my birthday",
            "a plant turns light into sugar",
            "the leaves of the plant turned yellow",
        ],
        "factory": [
            "the car plant employs two thousand workers",
            "the power plant supplies the whole city",
            "they are closing the steel plant next year",
            "he works night shifts at the chemical plant",
            "the plant produces ten thousand bottles a day",
            "a new water treatment plant was built near the town",
        ],
    },
    "crane": {
        "bird": [
            "a crane stood on one leg in the marsh",
            "the crane spread its wings and flew south",
            "we watched a crane catch a fish in the shallows",
            "the crane has a long neck and long legs",
            "every spring the crane returns to the wetland",
            "the crane called loudly to its mate",
        ],
        "machine": [
            "the crane lifted the steel beams onto the roof",
            "a tall crane towered over the building site",
            "the crane unloaded containers from the ship",
            "he operates a crane at the port",
            "the crane swung the concrete block into place",
            "workers waited for the crane to lower the load",
        ],
    },
    "date": {
        "fruit": [
            "she ate a sweet date with her tea",
            "the date is the fruit of a palm tree",
            "he stuffed each date with an almond",
            "a dried date keeps for months",
            "chop one date and add it to the cake",
            "the date tasted like honey and caramel",
        ],
        "day": [
            "what is the date of your birthday",
            "we set a date for the wedding",
            "please write the date at the top of the page",
            "the date of the meeting has changed",
            "the deadline date is next monday",
            "the letter had no date on it",
        ],
    },
    "seal": {
        "animal": [
            "a seal was lying on the rocks in the sun",
            "the seal dived into the cold water",
            "we watched a seal catch a fish",
            "the baby seal has white fur",
            "a seal swam close to our boat",
            "the seal barked at the tourists on the pier",
        ],
        "stamp": [
            "the king pressed his seal into the hot wax",
            "the letter carried the official seal of the city",
            "break the seal before you open the jar",
            "the document needs a seal and a signature",
            "the seal on the bottle was broken",
            "the envelope was closed with a red wax seal",
        ],
    },
    "trunk": {
        "tree": [
            "the trunk of the oak was too wide to hug",
            "ivy climbed up the trunk of the tree",
            "he carved his name into the trunk",
            "the storm split the trunk in two",
            "a woodpecker made a hole in the trunk",
            "the trunk of the palm is tall and thin",
        ],
        "car": [
            "put the suitcases in the trunk of the car",
            "she opened the trunk to get the spare tyre",
            "the trunk was full of groceries",
            "he locked the keys in the trunk",
            "there is enough room in the trunk for two bags",
            "close the trunk before we drive off",
        ],
    },
    "key": {
        "lock": [
            "i lost the key to the front door",
            "turn the key to the left to open the lock",
            "she kept a spare key under the mat",
            "the key did not fit the new lock",
            "he hung the car key on a hook",
            "a small brass key opened the old box",
        ],
        "keyboard": [
            "press the enter key to continue",
            "the space key on my laptop is stuck",
            "one key of the piano plays out of tune",
            "hold the shift key while you type the letter",
            "she hit the wrong key and deleted the file",
            "each key on the piano makes a different note",
        ],
    },
    "club": {
        "group": [
            "she joined the chess club at school",
            "the club meets every thursday evening",
            "he is a member of the tennis club",
            "our book club read three novels this summer",
            "the football club signed a new player",
            "the club raised money for the hospital",
        ],
        "stick": [
            "he hit the golf ball with a heavy club",
            "the caveman carried a wooden club",
            "choose a club from the golf bag",
            "the guard raised his club to strike",
            "she swung the club and the ball flew far",
            "a club made of oak lay by the fire",
        ],
    },
}

# The sentences the course started from, a pair per word in two senses, and a third sentence (from PLAIN_SENSES)
# in the first one's sense: the cosine tables of chapters 1-4, sentence -> sense.
SEED_SENTENCES: dict[str, dict[str, str]] = {
    "mouse": {
        "your mouse likes cheese": "animal",
        "buy a new mouse for your computer": "device",
        "the mouse ran under the kitchen door": "animal",
    },
    "apple": {
        "i want to eat an apple": "fruit",
        "i want to buy an apple watch": "company",
        "she cut the apple into thin slices": "fruit",
    },
}


# The seed words again in sentences that share equally many words whichever two are compared: every sentence of a word
# is one frame ("i want to _ an apple _", "i found a mouse _") with its own words in the gaps, used by no other
# sentence of that word, so a same-sense pair and a pair of different senses share the same words (the frame's), and
# the word stands at the same position in every one. The seeds' "i want to eat an apple" and "i want to buy an apple
# watch" are two of them. Sentence -> sense, five of each sense.
MATCHED_SENTENCES: dict[str, dict[str, str]] = {
    "mouse": {
        "i found a mouse nibbling cheese": "animal",
        "i found a mouse nesting in the attic": "animal",
        "i found a mouse caught under our fridge": "animal",
        "i found a mouse squeaking behind walls": "animal",
        "i found a mouse eating seeds": "animal",
        "i found a mouse with its cable cut": "device",
        "i found a mouse for my laptop": "device",
        "i found a mouse and keyboard set": "device",
        "i found a mouse that needs batteries": "device",
        "i found a mouse connected by usb": "device",
    },
    "apple": {
        "i want to eat an apple": "fruit",
        "i want to peel an apple with my knife": "fruit",
        "i want to taste an apple pie": "fruit",
        "i want to pick an apple from the tree": "fruit",
        "i want to cut an apple for lunch": "fruit",
        "i want to buy an apple watch": "company",
        "i want to order an apple laptop online": "company",
        "i want to repair an apple phone": "company",
        "i want to return an apple tablet": "company",
        "i want to own an apple computer": "company",
    },
}


def occurrences_of(sentences: dict[str, dict[str, str]]) -> list[SenseOccurrence]:
    """Sentences given as ``{word: {sentence: sense}}`` (``SEED_SENTENCES``, ``MATCHED_SENTENCES``, a reader's own) as
    occurrences of their word (its first position in each), with the sense ``"word.sense"``."""
    out = []
    for word, senses in sentences.items():
        for text, sense in senses.items():
            tokens = tuple(tokenize(text))
            if word not in tokens:
                raise ValueError(f"{word!r} is not a word of {text!r} (its words: {list(tokens)})")
            out.append(SenseOccurrence(tokens, tokens.index(word), word, f"{word}.{sense}", "plain", sense))
    return out


def plain_sense_occurrences() -> list[SenseOccurrence]:
    """Every sentence of ``PLAIN_SENSES`` as an occurrence of its word, with the sense ``"word.sense"``."""
    return occurrences_of(
        {
            word: {text: sense for sense, texts in senses.items() for text in texts}
            for word, senses in PLAIN_SENSES.items()
        }
    )
