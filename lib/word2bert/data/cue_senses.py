"""Plain sentences written for the course in which the word that decides an ambiguous word's sense, its *cue*, stands
on one side of it: the left/right-cue sense test on ordinary English (chapter 3's real decoder).

* ``LEFT_CUE``: the cue comes before the word ("the fisherman sat on the muddy **bank**"); nothing after the word says
  more about its sense. A left-to-right model has read the cue by the time it reaches the word.
* ``RIGHT_CUE``: every sentence of a word starts with one prefix that ends with the word ("we walked to the **bank**"),
  and the cue comes after it ("... to open a savings account", "... of the river to fish"). A left-to-right model
  gives the word the same vector in all of them, whatever the ending; a model that reads both ways can tell them
  apart.

Eight words, two senses each, four sentences per sense in each layout; each sentence has its word once, as a whole
token, lower case. ``cue_sense_occurrences`` turns them, or any other sentences in the same two formats (a held-out
set of one's own), into the occurrences the probes score.
"""

from __future__ import annotations

from .toyworld import SenseOccurrence
from .vocab import tokenize

# word -> sense -> sentences whose cue stands before the word.
LEFT_CUE: dict[str, dict[str, list[str]]] = {
    "mouse": {
        "animal": [
            "the cat finally caught the little grey mouse",
            "the owl swooped down on a field mouse",
            "we found droppings in the kitchen from a house mouse",
            "the cheese in the trap was eaten by a hungry mouse",
        ],
        "device": [
            "he plugged a new usb cable into his wireless mouse",
            "she clicked the icon twice with her computer mouse",
            "the laptop came with a cordless optical mouse",
            "i replaced the batteries in my bluetooth mouse",
        ],
    },
    "bank": {
        "river": [
            "the canoe drifted slowly towards the muddy river bank",
            "the fisherman sat all afternoon on the grassy bank",
            "after the flood the water rose over the bank",
            "the otters dug a den in the side of the stream bank",
        ],
        "money": [
            "she deposited her monthly wages at the local bank",
            "he borrowed money for a house from the bank",
            "the robbers escaped with the cash they took from the bank",
            "my savings account is with a high street bank",
        ],
    },
    "bat": {
        "animal": [
            "deep in the dark cave hung a sleeping bat",
            "the insects at dusk were hunted by a tiny brown bat",
            "in the attic we found a colony of the fruit bat",
            "the vet treated the broken wing of a vampire bat",
        ],
        "sport": [
            "the cricketer walked out to the pitch carrying his bat",
            "she hit the ball hard with a wooden baseball bat",
            "he bought new gloves and pads and a cricket bat",
            "the batter at home plate tightened his grip on the bat",
        ],
    },
    "bark": {
        "dog": [
            "the angry guard dog next door let out a loud bark",
            "the tiny puppy wagged its tail and gave a high bark",
            "we knew the postman had arrived from the dog's bark",
            "the hound chasing the fox answered with a deep bark",
        ],
        "tree": [
            "the old oak tree in the park has thick rough bark",
            "deer had stripped the young birch trees of their bark",
            "the beetles live in the cracks of the pine tree's bark",
            "moss and lichen grew thickly on the willow tree's bark",
        ],
    },
    "plant": {
        "flora": [
            "she watered the pot on the windowsill that held a tomato plant",
            "bees buzzed around the flowers of the lavender plant",
            "he grew tall green leaves from the seed of a bean plant",
            "the gardener repotted the roots of a house plant",
        ],
        "factory": [
            "two thousand workers build cars at the assembly plant",
            "the city gets its electricity from a nuclear power plant",
            "the company makes steel pipes at its manufacturing plant",
            "the night shift started work at the chemical plant",
        ],
    },
    "crane": {
        "bird": [
            "standing on one leg in the marsh was a white crane",
            "the birdwatchers spotted a rare whooping crane",
            "a frog was caught by the long beak of a grey crane",
            "flying south for the winter with its flock was a crane",
        ],
        "machine": [
            "the builders lifted the steel beams with a tower crane",
            "at the port the containers were unloaded by a crane",
            "the operator climbed into the cab of the construction crane",
            "the broken truck was lifted onto the trailer by a crane",
        ],
    },
    "seal": {
        "animal": [
            "lying on the rocks and catching fish was a grey seal",
            "the polar bear hunted on the ice for a seal",
            "the whiskers and flippers belonged to a harbour seal",
            "the zoo keeper threw a fish to the hungry seal",
        ],
        "stamp": [
            "the king pressed into the hot red wax his royal seal",
            "the document was signed by the mayor with the city seal",
            "the letter from the court carried an official seal",
            "she opened the envelope by breaking its wax seal",
        ],
    },
    "trunk": {
        "tree": [
            "ivy climbed up the oak tree's thick trunk",
            "the woodpecker drilled a hole in the pine's trunk",
            "the storm split the old elm tree down its trunk",
            "the lumberjack sawed through the maple's trunk",
        ],
        "car": [
            "he loaded the suitcases into the back of the car's trunk",
            "the spare tyre is kept under the floor of the car trunk",
            "she put the groceries from the supermarket in the car trunk",
            "the police searched the stolen vehicle's trunk",
        ],
    },
}

# word -> (the prefix every sentence of the word starts with, ending with the word; sense -> the endings that decide
# it). A sentence is the prefix, a space and an ending.
RIGHT_CUE: dict[str, tuple[str, dict[str, list[str]]]] = {
    "mouse": (
        "i saw a mouse",
        {
            "animal": [
                "run across the kitchen floor and hide from the cat",
                "nibbling the cheese in the trap",
                "squeaking under the floorboards at night",
                "with a long tail and whiskers in the barn",
            ],
            "device": [
                "plugged into the laptop with a usb cable",
                "next to the keyboard on his desk",
                "with a scroll wheel and two buttons",
                "that moves the cursor across the screen",
            ],
        },
    ),
    "bank": (
        "we walked along to the bank",
        {
            "river": [
                "of the river to go fishing",
                "where the ducks swim in the stream",
                "and sat on the grass by the water",
                "to watch the boats go by on the river",
            ],
            "money": [
                "to deposit our wages in the account",
                "to open a savings account",
                "and withdrew some cash from the teller",
                "to ask for a loan to buy the house",
            ],
        },
    ),
    "bat": (
        "he reached for the bat",
        {
            "animal": [
                "hanging upside down in the cave",
                "that flew out of the attic at night",
                "with its leathery wings folded",
                "that eats insects in the dark",
            ],
            "sport": [
                "and hit the ball over the fence",
                "to swing at the next pitch",
                "before walking out to the cricket pitch",
                "and scored a home run",
            ],
        },
    ),
    "bark": (
        "they talked about the bark",
        {
            "dog": [
                "of the angry dog next door",
                "that woke the neighbours when the puppy saw the postman",
                "of the hounds during the fox hunt",
                "that the dog gives whenever a stranger comes",
            ],
            "tree": [
                "of the old oak tree in the park",
                "peeling off the birch trunks",
                "that the deer had stripped from the young trees",
                "where the beetles live under the pine branches",
            ],
        },
    ),
    "plant": (
        "they went to see the plant",
        {
            "flora": [
                "growing in a pot on the windowsill",
                "with its green leaves and yellow flowers",
                "that needs watering twice a week in the garden",
                "whose seeds the bees carry from flower to flower",
            ],
            "factory": [
                "where the workers build cars on the assembly line",
                "that produces electricity for the whole city",
                "that makes steel pipes for the oil industry",
                "where the night shift operates the machines",
            ],
        },
    ),
    "crane": (
        "we watched the crane",
        {
            "bird": [
                "catch a fish in the shallow marsh",
                "spread its wings and fly south for the winter",
                "standing on one leg among the reeds",
                "feeding its chicks in the nest",
            ],
            "machine": [
                "lift the steel beams onto the roof",
                "unload the containers from the ship",
                "swing the concrete block into place on the building site",
                "that the operator drove to the construction site",
            ],
        },
    ),
    "seal": (
        "they photographed the seal",
        {
            "animal": [
                "lying on the rocks in the sun",
                "diving for fish in the cold sea",
                "with its flippers and whiskers on the beach",
                "that the polar bear was hunting on the ice",
            ],
            "stamp": [
                "pressed into the red wax on the letter",
                "on the king's official document",
                "that the notary stamped on the contract",
                "printed on the certificate from the university",
            ],
        },
    ),
    "trunk": (
        "he looked at the trunk",
        {
            "tree": [
                "of the old oak tree covered in ivy",
                "where the woodpecker had drilled its hole in the pine",
                "of the fallen tree after the storm",
                "with its rings showing how old the forest was",
            ],
            "car": [
                "of the car to find the spare tyre",
                "full of suitcases for the road trip",
                "before he closed it and drove off in the car",
                "where the groceries were packed behind the back seat of the car",
            ],
        },
    ),
}


def _occurrence(text: str, word: str, sense: str, cue: str) -> SenseOccurrence:
    tokens = tuple(tokenize(text))
    if tokens.count(word) != 1:
        raise ValueError(f"{word!r} must be a word of {text!r} once (its words: {list(tokens)})")
    return SenseOccurrence(tokens, tokens.index(word), word, f"{word}.{sense}", cue, f"{cue} cue")


def cue_sense_occurrences(
    left: dict[str, dict[str, list[str]]] | None = None,
    right: dict[str, tuple[str, dict[str, list[str]]]] | None = None,
) -> dict[str, list[SenseOccurrence]]:
    """The sentences as occurrences of their word, with the sense ``"word.sense"``, in two lists: ``"left"`` (cue
    before the word, ``LEFT_CUE`` by default) and ``"right"`` (one prefix per word, ending with the word, then the
    cue: ``RIGHT_CUE``). Other sentences in the same formats, such as a held-out set, go through the same checks:
    each word once in each sentence, each right-cue prefix ending with its word."""
    left = LEFT_CUE if left is None else left
    right = RIGHT_CUE if right is None else right
    out = {"left": [], "right": []}
    for word, senses in left.items():
        out["left"] += [_occurrence(text, word, sense, "left") for sense, texts in senses.items() for text in texts]
    for word, (prefix, senses) in right.items():
        if tokenize(prefix)[-1:] != [word]:
            raise ValueError(f"the right-cue prefix {prefix!r} must end with {word!r}")
        for sense, endings in senses.items():
            out["right"] += [_occurrence(f"{prefix} {ending}", word, sense, "right") for ending in endings]
    return out
