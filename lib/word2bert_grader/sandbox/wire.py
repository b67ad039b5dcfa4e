"""The data-only channel between the grader and a sandbox (README.md, "The wire"): nothing read is unpickled, imported
or executed. It runs on both sides, bound read-only into each sandbox, so it imports nothing of the grader."""

import json
import random
import struct
from collections import Counter
from enum import StrEnum

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors


class Op(StrEnum):
    """The requests the grader sends (a header's ``"op"``); the runner answers each with its ``op_<name>``."""

    HELLO = "hello"  # set the rlimits, start the shell
    RUN_CELL = "run_cell"
    NAMES = "names"  # the student's values of these names
    CALL = "call"  # call a handle's function or method
    BACKWARD = "backward"  # gradients back through a call
    RELEASE = "release"  # forget calls the grader no longer holds


# What a handle (``{"$handle": h, "kind": ...}``) names, so that the grader knows which proxy to build.
HandleKind = StrEnum("HandleKind", {"MODULE": "module", "CLASS": "class", "FUNCTION": "function", "OBJECT": "object"})


MAX_DEPTH = 64
INT_LIMIT = 2**63  # integers are those of a tensor, int64: Python's hash is the identity on them, nearly
MAX_SHARED_HASH = 8  # distinct dict keys with one hash (honest data: 2 at most, -1 and -2 say)
MAX_HEADER = 8 * 2**20  # JSON becomes Python objects many times its size: kept well under the tensors' cap
# values that a result's references to its arguments ({"$arg": n}) may stand for, in all (a header's worth)
MAX_REFERENCED = 2**22
# torch.nn modules whose forward the grader runs itself; every other module's runs in the sandbox
LOCAL_MODULES = frozenset(
    "Linear Bilinear Identity Dropout Dropout1d Dropout2d Dropout3d AlphaDropout LayerNorm Embedding ReLU GELU Tanh "
    "Sigmoid SiLU Softmax LogSoftmax LeakyReLU ELU Softplus Flatten Sequential ModuleList ModuleDict".split()
)
_DTYPES = {n: getattr(torch, n) for n in "float64 float32 float16 bfloat16 int64 int32 int16 int8 uint8 bool".split()}


class WireError(Exception):
    """A frame that is not a well-formed message (from a broken or hostile peer)."""


class Encoder:
    """Encodes one message; ``handle(obj)`` is asked for anything that is not data (None: refuse)."""

    def __init__(self, handle=None):
        self.tensors: dict[str, torch.Tensor] = {}
        self.handle = handle
        self.containers: list = []  # every list and dict encoded, children first (see Decoder.containers)
        self.sizes: list[int] = []  # the number of values in each of them, itself included
        self.aliases: dict[int, int] = {}  # id of an argument's list or dict -> its number: sent as {"$arg": n}
        self.count = 0  # values encoded so far

    def _container(self, value, encoded: dict, start: int) -> dict:
        self.containers.append(value)
        self.sizes.append(self.count - start)
        return encoded

    def tensor(self, t: torch.Tensor) -> str:
        name = f"t{len(self.tensors)}"
        t = t.detach()
        if t.layout != torch.strided or t.is_quantized or t.is_complex() or t.device.type == "meta":
            raise TypeError(f"cannot send a {t.layout} {t.dtype} tensor")
        if t.dtype not in _DTYPES.values():
            raise TypeError(f"cannot send a tensor of dtype {t.dtype}")
        self.tensors[name] = t.to("cpu", copy=True).contiguous()
        return name

    def encode(self, value, depth: int = 0):
        if depth > MAX_DEPTH:
            raise TypeError("value nested too deeply")
        start, self.count = self.count, self.count + 1
        kind = type(value)
        if value is None or kind in (bool, int, float, str):
            return value
        if isinstance(value, (list, dict)) and id(value) in self.aliases:
            return {"$arg": self.aliases[id(value)]}
        if isinstance(value, list):
            return self._container(value, {"$list": [self.encode(v, depth + 1) for v in list.__iter__(value)]}, start)
        if isinstance(value, tuple) and kind is not torch.Size:
            return {"$tuple": [self.encode(v, depth + 1) for v in tuple.__iter__(value)]}
        if isinstance(value, dict):
            pairs = [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in dict.items(value)]
            return self._container(value, {"$dict": pairs}, start)
        if kind is torch.Size:
            return {"$size": [int(d) for d in value]}
        if kind is torch.dtype:
            return {"$dtype": str(value).removeprefix("torch.")}
        if kind is torch.device:
            return {"$device": str(value)}
        if kind is random.Random:
            version, internal, gauss = value.getstate()
            return {"$random": [version, list(internal), gauss]}
        if kind is torch.Generator and value.device.type == "cpu":
            return {"$generator": self.tensor(value.get_state())}
        if isinstance(value, torch.Tensor):
            return {"$tensor": self.tensor(value), "grad": bool(value.requires_grad)}
        if type(value).__module__ == "numpy" and type(value).__name__ == "ndarray" and value.dtype.kind in "biuf":
            return {"$ndarray": self.tensor(torch.from_numpy(value.copy()))}
        if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "shape", None) == ():
            return self.encode(value.item(), depth)
        if self.handle is not None:
            return self.handle(value)
        raise TypeError(
            f"cannot send a {type(value).__name__} to student code (data only: tensors, "
            "numbers, strings, lists, tuples, dicts, random.Random, torch.Generator)"
        )


def module_state(handle: int, module, encoder: Encoder) -> list:
    """``[handle, training, parameters, buffers]``: one mirrored module's state, as either side sends it."""
    params = {n: encoder.encode(p) for n, p in module._parameters.items() if p is not None}
    buffers = {n: encoder.encode(b) for n, b in module._buffers.items() if b is not None}
    return [handle, module.training, params, buffers]


def cap(text: str, limit: int) -> str:
    """At most ``limit`` characters of student text, and how long it was where it was cut."""
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text):,} characters, cut)"


def frame_bytes(header: dict, tensors: dict[str, torch.Tensor] | None = None) -> bytes:
    head = json.dumps(header, allow_nan=True).encode("utf-8")
    blob = save_tensors(tensors) if tensors else b""
    return struct.pack(">Q", len(head)) + head + struct.pack(">Q", len(blob)) + blob


def read_frame(read_exactly, max_bytes: int) -> tuple[dict, dict[str, torch.Tensor]]:
    """One frame through ``read_exactly(n) -> bytes``; refuses frames larger than ``max_bytes``."""
    (n,) = struct.unpack(">Q", read_exactly(8))
    if n > min(max_bytes, MAX_HEADER):
        raise WireError(f"a message header of {n:,} bytes (the limit is {min(max_bytes, MAX_HEADER):,})")
    try:
        header = json.loads(read_exactly(n).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise WireError(f"not a JSON message ({type(error).__name__})") from None
    (m,) = struct.unpack(">Q", read_exactly(8))
    if n + m > max_bytes:
        raise WireError(f"a message of {n + m:,} bytes (the limit is {max_bytes:,})")
    blob = read_exactly(m) if m else b""
    try:
        tensors = load_tensors(blob) if blob else {}
    except Exception as error:  # safetensors raises its own error types
        raise WireError(f"bad tensor data ({type(error).__name__}: {str(error)[:200]})") from None
    if not isinstance(header, dict):
        raise WireError("a message must be a JSON object")
    return header, tensors


class Decoder:
    """Rebuilds plain values; ``handle(spec)`` makes the caller's proxy; ``grad``: marked tensors need gradients."""

    def __init__(self, tensors: dict[str, torch.Tensor], handle=None, grad: bool = False, arguments=(), sizes=()):
        self.tensors = tensors
        self.handle = handle
        self.grad = grad
        self.used: set[str] = set()
        self.arguments = list(arguments)  # the caller's lists and dicts that {"$arg": n} may name (Encoder.containers)
        self.sizes = list(sizes)  # their sizes (Encoder.sizes), charged to MAX_REFERENCED per reference
        self.referenced = 0
        self.containers: list = []  # every list and dict decoded, children first (as Encoder.containers)

    def tensor(self, name) -> torch.Tensor:
        # encoders name every tensor anew: a name read twice is forged (a way to copy one large tensor many times)
        if type(name) is not str or name not in self.tensors or name in self.used:
            raise WireError(f"unknown or repeated tensor {str(name)[:40]!r}")
        self.used.add(name)
        return self.tensors[name]

    def decode(self, value, depth: int = 0):
        if depth > MAX_DEPTH:
            raise WireError("value nested too deeply")
        kind = type(value)
        if kind is int:
            return _int(value)
        if value is None or kind in (bool, float, str):
            return value
        if kind is dict and "$handle" in value and self.handle is not None:
            return self.handle(value)
        if kind is not dict or len(value) > 2:
            raise WireError(f"unexpected {kind.__name__} in a message")
        if "$arg" in value:
            n = value["$arg"]
            if type(n) is not int or not 0 <= n < len(self.arguments):
                raise WireError("a reference to an argument that was not sent")
            self.referenced += self.sizes[n]
            if self.referenced > MAX_REFERENCED:
                raise WireError(f"a result that names its arguments for more than {MAX_REFERENCED:,} values")
            return self.arguments[n]
        if "$list" in value:
            self.containers.append(made := [self.decode(v, depth + 1) for v in _items(value["$list"])])
            return made
        if "$tuple" in value:
            return tuple(self.decode(v, depth + 1) for v in _items(value["$tuple"]))
        if "$dict" in value:
            pairs = []
            for pair in _items(value["$dict"]):
                if type(pair) is not list or len(pair) != 2:
                    raise WireError("a dict entry is not a [key, value] pair")
                key = self.decode(pair[0], depth + 1)
                if not _hashable(key):
                    raise WireError(f"a dict key of type {type(key).__name__}")
                pairs.append((key, self.decode(pair[1], depth + 1)))
            distinct_hashes([key for key, _ in pairs])
            self.containers.append(made := dict(pairs))
            return made
        if "$tensor" in value:
            t = self.tensor(value["$tensor"])
            if self.grad and value.get("grad") is True and t.is_floating_point():
                t.requires_grad_(True)
            return t
        if "$size" in value:
            return torch.Size([_int(d) for d in _items(value["$size"])])
        for tag, known in (("$dtype", _DTYPES), ("$device", {"cpu": torch.device("cpu")})):
            if tag in value and value[tag] in known:
                return known[value[tag]]
            if tag in value:
                raise WireError(f"unknown {tag[1:]} {str(value[tag])[:40]!r}")
        if "$random" in value:
            try:
                version, internal, gauss = _items(value["$random"])
                (rng := random.Random()).setstate(
                    (_int(version), tuple(_int(v) for v in _items(internal)), None if gauss is None else float(gauss))
                )
            except (ValueError, TypeError, OverflowError) as error:
                raise WireError(f"bad random.Random state ({error})") from None
            return rng
        if "$generator" in value:
            g = torch.Generator()
            try:
                g.set_state(self.tensor(value["$generator"]))
            except (RuntimeError, TypeError) as error:
                raise WireError(f"bad torch.Generator state ({str(error)[:100]})") from None
            return g
        if "$ndarray" in value:
            return self.tensor(value["$ndarray"]).numpy()
        raise WireError(f"unexpected object {sorted(map(str, value))[:3]} in a message")


def _items(value) -> list:
    if type(value) is not list:
        raise WireError("expected a list")
    return value


def _int(value) -> int:
    if type(value) is not int or not -INT_LIMIT <= value < INT_LIMIT:
        raise WireError("expected an integer of 64 bits")
    return value


def distinct_hashes(keys) -> None:
    """Refuse dict keys built to share a hash (n of them take n² steps to build)."""
    if keys and max(Counter(map(hash, keys)).values()) > MAX_SHARED_HASH:
        raise WireError(f"more than {MAX_SHARED_HASH} dict keys with the same hash")


def _hashable(key) -> bool:
    if key is None or type(key) in (bool, int, float, str):
        return True
    return type(key) is tuple and all(_hashable(k) for k in key)


def tensors_in(value, encoded) -> list[tuple[str, torch.Tensor, bool]]:
    """(wire name, tensor, marked for gradients) of every tensor in ``value``, walked beside its encoding."""
    found = []

    def walk(v, e):
        if type(e) is not dict:
            return
        if isinstance(v, torch.Tensor) and "$tensor" in e:
            found.append((e["$tensor"], v, e.get("grad") is True))
        elif isinstance(v, list):
            for x, y in zip(list.__iter__(v), e.get("$list", [])):
                walk(x, y)
        elif isinstance(v, tuple):
            for x, y in zip(tuple.__iter__(v), e.get("$tuple", [])):
                walk(x, y)
        elif isinstance(v, dict):
            for x, pair in zip(dict.values(v), e.get("$dict", [])):
                if type(pair) is list and len(pair) == 2:
                    walk(x, pair[1])

    walk(value, encoded)
    return found
