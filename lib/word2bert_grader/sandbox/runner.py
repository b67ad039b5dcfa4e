"""The sandbox side: runs a student's cells and calls into what they defined, answering each request of the grader
(a :class:`wire.Op`) with ``op_<name>``. Everything here is the student's to change: the grader trusts none of it."""

import io
import os
import random
import resource
import sys
import traceback
from collections import OrderedDict

import torch

try:
    from . import wire
except ImportError:  # inside the sandbox this file and wire.py sit side by side, not in a package
    import wire

LOCAL_MODULES = wire.LOCAL_MODULES

MAX_FRAME = 256 * 2**20
MAX_OUTPUT = 100_000  # characters kept of one cell's text output
MAX_RETAINED = 256  # graphs kept for a later backward


class _NoLibrary:
    """Import hook: the course library is not in the sandbox, and saying so beats ModuleNotFoundError."""

    def find_spec(self, name, path=None, target=None):
        __tracebackhide__ = True  # noqa: F841 (IPython leaves this frame out of the student's traceback)
        if name.split(".")[0] in ("word2bert", "word2bert_grader"):
            own = (
                "code, written with torch, math and random (the tests import the library themselves where they need it)"
            )
            raise ImportError(f"{name} is not available while grading: answers are graded as your own {own}")
        return None


class Runner:
    def __init__(self, fd_in: int, fd_out: int):
        self.inp = os.fdopen(fd_in, "rb")
        self.out = os.fdopen(fd_out, "wb", buffering=0)
        self.objects: dict[int, object] = {}
        self.ids: dict[int, int] = {}  # id(obj) -> handle, so one object keeps one handle
        self.calls: OrderedDict[int, tuple] = OrderedDict()
        self.next_id = 1
        self.shell = None
        self.encoder = None  # the message being encoded (module handles put their tensors in it)

    def read_exactly(self, n: int) -> bytes:
        data = self.inp.read(n)  # a buffered read: n bytes, or fewer at the end of the stream
        if len(data) < n:
            raise EOFError
        return data

    def serve(self) -> None:
        while True:
            try:
                header, tensors = wire.read_frame(self.read_exactly, MAX_FRAME)
            except EOFError:
                return
            try:
                reply, out_tensors = getattr(self, f"op_{wire.Op(header.get('op'))}")(header, tensors)
            except BaseException as error:  # a failure of this request (SystemExit too), reported as data
                reply, out_tensors = {"ok": False, "error": describe(error)}, {}
            self.out.write(wire.frame_bytes(reply, out_tensors))

    def op_hello(self, header, tensors):
        # the grader's soft RLIMIT_DATA (grade_in_own_process) is inherited: lifted (the cgroup is this one's limit)
        data = resource.getrlimit(resource.RLIMIT_DATA)[1]
        resource.setrlimit(resource.RLIMIT_DATA, (data, data))
        limits = header.get("limits", {})
        for name, value in limits.items():
            kind = getattr(resource, f"RLIMIT_{name.upper()}")
            resource.setrlimit(kind, (value, value))  # hard limits: student code cannot raise them
        sys.meta_path.insert(0, _NoLibrary())
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config

        config = Config()
        config.HistoryManager.enabled = False  # no history database in the scratch folder
        self.shell = InteractiveShell.instance(config=config, colors="nocolor")
        self.shell.user_ns["__name__"] = "__main__"
        measured = {
            n: resource.getrlimit(getattr(resource, f"RLIMIT_{n.upper()}"))[1]
            for n in ("nproc", "cpu", "fsize", "nofile")
        }
        return {"ok": True, "pid": os.getpid(), "uid": os.getuid(), "rlimits": measured}, {}

    def op_run_cell(self, header, tensors):
        from IPython.utils.capture import capture_output

        with capture_output() as captured:
            result = self.shell.run_cell(header["source"], store_history=True)
        error = result.error_before_exec or result.error_in_exec
        outputs = []
        for name, text in (("stdout", captured.stdout), ("stderr", captured.stderr)):
            if text:
                outputs.append({"type": "stream", "name": name, "text": wire.cap(text, MAX_OUTPUT)})
        for shown in captured.outputs[:20]:
            kinds = ("text/plain", "text/html", "text/markdown", "image/png")
            data = {k: wire.cap(v, MAX_OUTPUT) for k, v in shown.data.items() if k in kinds and isinstance(v, str)}
            outputs.append({"type": "display", "data": data})
        return {"ok": True, "outputs": outputs, "error": describe(error) if error else None}, {}

    def op_names(self, header, tensors):
        encoder, space = wire.Encoder(self.handle), self.shell.user_ns
        self.encoder = encoder
        found = {name: encoder.encode(space[name]) for name in header["names"] if name in space}
        return {"ok": True, "names": found}, encoder.tensors

    def op_call(self, header, tensors):
        decoder = wire.Decoder(tensors, lambda spec: self.objects[spec["$handle"]], grad=True)
        target = self.objects[header["target"]]
        if header.get("method"):
            target = getattr(target, header["method"])
        args = decoder.decode(header["args"])
        kwargs = decoder.decode(header["kwargs"])
        torch.set_rng_state(decoder.decode(header["rng"]["torch"]))
        random.setstate(decoder.decode(header["rng"]["random"]).getstate())
        modules = self.load_modules(header["modules"], tensors)
        # The tensors that need gradients, in the order the grader numbered them.
        found = wire.tensors_in(args, header["args"]) + wire.tensors_in(kwargs, header["kwargs"])
        wanted = [(name, t) for name, t, _ in found if t.requires_grad]
        with torch.set_grad_enabled(bool(header["grad"])):
            result = target(*args, **kwargs)
        encoder = self.encoder = wire.Encoder(self.handle)
        # A result that is one of the argument lists or dicts (not a copy) goes back as a reference to it
        encoder.aliases = {id(c): n for n, c in enumerate(decoder.containers)}
        encoded = encoder.encode(result)
        encoder.aliases = {}  # the arguments themselves go back by value (what the call left in them)
        reply = {"ok": True, "result": encoded, "args": encoder.encode(args), "kwargs": encoder.encode(kwargs)}
        reply.update(modules=[wire.module_state(h, m, encoder) for h, m in modules], call=None)
        outputs = [t for _, t, marked in wire.tensors_in(result, reply["result"]) if marked]
        params = [
            (h, n, p) for h, module in modules for n, p in module.named_parameters(recurse=False) if p.requires_grad
        ]
        if header["grad"] and outputs and (wanted or params):
            call_id = self.new_id()
            self.calls[call_id] = (outputs, wanted, params)
            while len(self.calls) > MAX_RETAINED:
                self.calls.popitem(last=False)
            reply["call"] = call_id
        return reply, encoder.tensors

    def op_backward(self, header, tensors):
        outputs, wanted, params = self.calls[header["call"]]
        decoder = wire.Decoder(tensors)
        grads_out = [decoder.decode(g) for g in header["grads"]]
        keep = [i for i, g in enumerate(grads_out) if g is not None]
        inputs = [t for _, t in wanted] + [p for _, _, p in params]
        grads = torch.autograd.grad(
            [outputs[i] for i in keep], inputs, [grads_out[i] for i in keep], allow_unused=True, retain_graph=True
        )
        encoder = wire.Encoder()
        inputs = [[name, None if g is None else encoder.encode(g)] for (name, _), g in zip(wanted, grads)]
        params = [
            [h, n, None if g is None else encoder.encode(g)] for (h, n, _), g in zip(params, grads[len(wanted) :])
        ]
        return {"ok": True, "inputs": inputs, "params": params}, encoder.tensors

    def op_release(self, header, tensors):
        for c in header.get("calls", []):
            self.calls.pop(c, None)
        return {"ok": True}, {}

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def handle(self, obj) -> dict:
        """Anything that is not data is named by a handle, described well enough to be proxied."""
        spec = {
            "$handle": self.handle_of(obj),
            "name": str(getattr(obj, "__qualname__", None) or type(obj).__name__)[:80],
        }
        if isinstance(obj, torch.nn.Module):
            spec.update(kind=wire.HandleKind.MODULE, tree=self.describe_module(obj))
        elif isinstance(obj, type):
            spec.update(kind=wire.HandleKind.CLASS, base=_torch_base(obj) if issubclass(obj, torch.nn.Module) else None)
        elif callable(obj):
            spec.update(kind=wire.HandleKind.FUNCTION)
        else:
            spec.update(kind=wire.HandleKind.OBJECT)
        return spec

    def describe_module(self, module: torch.nn.Module) -> dict:
        """The module tree: class, attributes, direct parameters and buffers (by handle) and children."""
        nodes = {}
        for _, m in module.named_modules(remove_duplicate=True):
            h = self.handle_of(m)
            cls = type(m)
            local = cls.__name__ if _torch_class(cls) and cls.__name__ in LOCAL_MODULES else None
            encode = self.encoder.encode
            attrs = {
                k: encode(v) for k, v in vars(m).items() if not k.startswith("_") and k != "training" and _plain(v)
            }
            params = {n: encode(p) for n, p in m._parameters.items() if p is not None}
            buffers = {n: encode(b) for n, b in m._buffers.items() if b is not None}
            children = [[n, self.handle_of(c)] for n, c in m._modules.items() if c is not None]
            nodes[h] = dict(name=cls.__name__, builtin=local, training=m.training, params=params, buffers=buffers)
            # any other class's forward runs here
            nodes[h].update(base=_torch_base(cls), attrs=attrs, children=children, methods=_methods(cls))
            nodes[h]["class"] = None if local else self.handle_of(cls)
        return {"root": self.handle_of(module), "nodes": [[h, node] for h, node in nodes.items()]}

    def handle_of(self, obj) -> int:
        """The number that names ``obj``: one per object, while this process holds it."""
        if id(obj) not in self.ids or self.objects.get(self.ids[id(obj)]) is not obj:
            self.ids[id(obj)] = self.new_id()
            self.objects[self.ids[id(obj)]] = obj
        return self.ids[id(obj)]

    def load_modules(self, states, tensors) -> list[tuple[int, torch.nn.Module]]:
        """Put the grader's parameter values, buffers and train/eval flags into the student's modules."""
        decoder = wire.Decoder(tensors, grad=True)
        modules = []
        for h, training, params, buffers in states:
            module = self.objects[h]
            module.training = bool(training)
            for name, value in params.items():
                value = decoder.decode(value)
                param = module._parameters[name]
                param.data = value.detach()
                param.requires_grad_(value.requires_grad)
                param.grad = None
            for name, value in buffers.items():
                module._buffers[name] = decoder.decode(value)
            modules.append((h, module))
        return modules


def describe(error: BaseException) -> dict:
    bases = [c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins"]
    text = wire.cap("".join(traceback.format_exception(type(error), error, error.__traceback__, limit=-8)), 20_000)
    return {"type": type(error).__name__, "bases": bases, "message": wire.cap(str(error), 4000), "traceback": text}


def _plain(value, depth: int = 0) -> bool:
    if value is None or type(value) in (bool, int, float, str):
        return True
    return type(value) in (tuple, list) and depth < 3 and len(value) < 64 and all(_plain(v, depth + 1) for v in value)


def _torch_class(cls) -> bool:
    """One of torch.nn's own module classes (nn.Linear, nn.LSTM, nn.CrossEntropyLoss...)."""
    return cls.__module__.startswith("torch.nn.modules") and getattr(torch.nn, cls.__name__, None) is cls


def _torch_base(cls) -> str:
    """The nearest torch.nn class this class derives from, by name ("Module" at least)."""
    return next((base.__name__ for base in cls.__mro__ if _torch_class(base)), "Module")


def _methods(cls) -> list[str]:
    """Public methods the student's class adds to torch's (the grader can call them remotely)."""
    if _torch_class(cls):
        return []
    own = set()
    for klass in cls.__mro__:
        if klass.__module__.startswith("torch"):
            break
        own |= {k for k, v in vars(klass).items() if callable(v) and not k.startswith("_")}
    return sorted(own - {"forward"})


if __name__ == "__main__":
    sys.stdin = io.StringIO("")
    Runner(int(sys.argv[1]), int(sys.argv[2])).serve()
