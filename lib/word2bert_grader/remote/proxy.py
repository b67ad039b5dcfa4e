"""The grader's side of a sandbox: what the student defined, as proxies the tests call as if it were here (data in,
changes in place back, gradients across, exceptions as their built-in types, a crash a :class:`SandboxFailure`)."""

import builtins
import functools
import random
import time

import torch
from torch import nn

from word2bert_grader.remote.mirror import Mirror, RemoteMethod, RemoteModule, handle_ok, identifier
from word2bert_grader.sandbox import wire
from word2bert_grader.sandbox.process import Sandbox, SandboxError, SandboxTimeout


class StudentError(Exception):
    """Base of the exceptions rebuilt from the student's code (each also a subclass of the built-in)."""

    student_traceback = ""


class SandboxFailure(BaseException):
    """The student's code crashed the sandbox or ran past the cell's time limit (not catchable as Exception)."""


class UnreadableFailure(SandboxFailure):
    """What the student's code gave has a shape the grader cannot read: said so, never called tampering."""


class Session:
    """One submission's sandbox, as the tests see it."""

    def __init__(self, sandbox: Sandbox, restart=None):
        self.sandbox, self.mirror, self.deadline, self.limit = sandbox, Mirror(self), float("inf"), 0.0
        self.restart = restart  # called to bring a dead sandbox back (re-running the student's cells)
        self._released_calls: list[int] = []
        self._current_decoder = None  # the reply being decoded (module descriptions read tensors from it)
        self._encoding_modules: dict[int, nn.Module] = {}

    @property
    def generation(self) -> int:
        return self.sandbox.generation

    def ensure_running(self) -> None:
        if self.sandbox.process is None or self.sandbox.process.poll() is not None:
            if self.restart is None:
                raise SandboxFailure(f"your code stopped the sandbox earlier ({self.sandbox.why_dead()})")
            self.restart()

    def request(self, header: dict, tensors: dict | None = None) -> tuple[dict, dict]:
        self.ensure_running()
        if self._released_calls:
            calls, self._released_calls = self._released_calls, []
            self._send({"op": wire.Op.RELEASE, "calls": calls}, None)
        return self._send(header, tensors)

    def _send(self, header, tensors):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise SandboxFailure(f"ran past the {self.limit:g} s limit of this cell")
        try:
            reply, tensors = self.sandbox.request(header, tensors, timeout=left)
        except SandboxTimeout:
            raise SandboxFailure(f"ran past the {self.limit:g} s limit of this cell (an infinite loop?)") from None
        except SandboxError as error:
            raise SandboxFailure(f"your code stopped the sandbox: {error}") from None
        if reply.get("ok") is not True:
            raise student_exception(reply.get("error"))
        return reply, tensors

    def names(self, names: list[str]) -> dict[str, object]:
        """The student's values of ``names`` (data, or proxies); names the student did not define are absent."""
        reply, tensors = self.request({"op": wire.Op.NAMES, "names": names})
        found = reply.get("names")
        if type(found) is not dict:
            raise SandboxFailure("the sandbox's reply did not say what your notebook defines")
        decoder, out = wire.Decoder(tensors, self._proxy), {}
        self._current_decoder = decoder
        for name in (n for n in names if n in found):
            try:
                out[name] = decoder.decode(found[name])
            except (wire.WireError, KeyError, TypeError, ValueError) as error:
                out[name] = Unreadable(name, str(error))
        return out

    def call(self, target, method: str | None, args: tuple, kwargs: dict):
        """Call ``target`` (a proxy), or its ``method``, in the sandbox, as if it were here."""
        self.ensure_running()
        if target._w2b_generation != self.generation:
            why = "your code crashed or ran past its time limit earlier"
            raise SandboxFailure(f"this object was made before the sandbox restarted ({why}), so it is gone")
        encoder = wire.Encoder(self._unproxy)
        modules: dict[int, nn.Module] = {}
        self._collect_modules(target, modules)
        self._encoding_modules = modules
        try:
            enc_args = encoder.encode(tuple(args))
            enc_kwargs = encoder.encode(dict(kwargs))
        except TypeError as error:
            raise TypeError(f"the grader cannot pass this to your code: {error}") from None
        (copy := random.Random()).setstate(random.getstate())  # the global state, sent by value
        rng = {"torch": encoder.encode(torch.get_rng_state()), "random": encoder.encode(copy)}
        states = [wire.module_state(h, m, encoder) for h, m in modules.items()]
        found = wire.tensors_in(tuple(args), enc_args) + wire.tensors_in(dict(kwargs), enc_kwargs)
        inputs = [(name, t) for name, t, _ in found if t.requires_grad]
        params = [((h, n), p) for h, m in modules.items() for n, p in m._parameters.items() if p is not None]
        params = [(key, p) for key, p in params if p.requires_grad]
        header = dict(op=wire.Op.CALL, target=target._w2b_handle, method=method, args=enc_args, kwargs=enc_kwargs)
        header.update(rng=rng, modules=states, grad=torch.is_grad_enabled())
        call = _Call(self, header, encoder, args, kwargs, modules, inputs, params)
        try:
            if torch.is_grad_enabled() and (inputs or params):
                outputs = _RemoteCall.apply(call, *[t for _, t in inputs], *[p for _, p in params])
                return call.result_with(outputs)
            call.run()
            return call.result
        finally:
            # move the grader's random streams on by a step of their own (never taking the student's state)
            torch.randint(0, 2, (1,))
            random.random()

    def _collect_modules(self, value, found: dict) -> None:
        """Every mirrored module tree the call touches: the target's and those in the arguments."""
        if isinstance(value, RemoteModule) or (isinstance(value, nn.Module) and "_w2b_handle" in vars(value)):
            root = vars(value).get("_w2b_root") or value
            for m in root.modules():
                if "_w2b_handle" in vars(m):
                    found[m._w2b_handle] = m

    def _unproxy(self, value):
        """Proxies go back as their handles; anything else that is not data cannot be sent."""
        if isinstance(value, nn.Module) and "_w2b_handle" in vars(value):
            if value._w2b_generation != self.generation:
                raise TypeError("a module made before the sandbox restarted")
            self._collect_modules(value, self._encoding_modules)
            return {"$handle": value._w2b_handle}
        if isinstance(value, (RemoteFunction, RemoteObject)) or getattr(value, "_w2b_class", None):
            return {"$handle": value._w2b_handle}
        data = "tensors, numbers, strings, lists, tuples, dicts, random.Random, torch.Generator, objects of your code"
        raise TypeError(f"cannot send a {type(value).__name__} (data only: {data})")

    def _proxy(self, spec: dict):
        h, kind, name = spec.get("$handle"), spec.get("kind"), identifier(spec.get("name"))
        if not handle_ok(h):
            raise wire.WireError("a handle is not a 64-bit int")
        if kind == wire.HandleKind.FUNCTION:
            return RemoteFunction(self, h, name)
        if kind == wire.HandleKind.CLASS:
            if spec.get("base") is not None:
                return self.mirror.module_class(h, name, spec["base"])
            return RemoteFunction(self, h, name, "class")
        if kind == wire.HandleKind.MODULE:
            return self.mirror.tree(spec.get("tree"), self._current_decoder)
        return RemoteObject(self, h, name)


class _Call:
    """One remote call: sends it, rebuilds its result, writes back what it changed."""

    def __init__(self, session, header, encoder, args, kwargs, modules, inputs, params):
        self.session, self.header, self.tensors = session, header, encoder.tensors
        # the lists and dicts of the arguments, numbered as the sandbox does, and their sizes
        self.arguments, self.sizes = encoder.containers, encoder.sizes
        self.args, self.kwargs, self.modules, self.inputs, self.params = args, kwargs, modules, inputs, params
        self.result, self.grad_outputs, self.call_id = None, [], None

    def run(self) -> None:
        session = self.session
        reply, tensors = session.request(self.header, self.tensors)
        decoder = wire.Decoder(tensors, session._proxy, arguments=self.arguments, sizes=self.sizes)
        session._current_decoder = decoder
        try:
            # The sandbox computes on the CPU: what comes back goes where the test's tensors are (a GPU grader)
            device = _device_of(self.args, self.kwargs, self.modules)
            self.result = _map_tensors(decoder.decode(reply.get("result")), lambda t: t.to(device))
            decoder.arguments = []  # what the arguments became comes by value (a reference there could make a cycle)
            _write_back(self.args, decoder.decode(reply.get("args")))
            _write_back(self.kwargs, decoder.decode(reply.get("kwargs")))
            session.mirror.refresh(reply.get("modules") or [], decoder)
        except (wire.WireError, KeyError, TypeError, ValueError, RuntimeError) as e:
            why = f"what your code returned could not be read by the grader ({str(e)[:200]})"
            raise UnreadableFailure(why) from None
        marked = wire.tensors_in(self.result, reply.get("result"))
        self.grad_outputs = [t for _, t, grad in marked if grad and t.is_floating_point()]
        self.call_id = reply.get("call") if type(reply.get("call")) is int else None

    def result_with(self, outputs) -> object:
        """The result, with its differentiable tensors replaced by the autograd function's outputs."""
        replace = {id(t): o for t, o in zip(self.grad_outputs, outputs[:-1])}
        return _map_tensors(self.result, lambda t: replace.get(id(t), t))

    def backward(self, grads) -> list:
        wanted = self.inputs + self.params
        if self.call_id is None:
            return [None] * len(wanted)
        encoder = wire.Encoder()
        encoded = [None if g is None else encoder.encode(g.contiguous()) for g in grads]
        header = {"op": wire.Op.BACKWARD, "call": self.call_id, "grads": encoded}
        reply, tensors = self.session.request(header, encoder.tensors)
        decoder = wire.Decoder(tensors)
        keys = {key for key, _ in wanted}  # only these are kept: a key built to collide costs a lookup, no more
        found = {}
        try:
            for name, g in reply.get("inputs") or []:
                if name in keys:
                    found[name] = None if g is None else decoder.decode(g)
            for h, n, g in reply.get("params") or []:
                if (h, n) in keys:
                    found[(h, n)] = None if g is None else decoder.decode(g)
        except (wire.WireError, TypeError, ValueError) as e:
            raise UnreadableFailure(f"your code's gradients could not be read by the grader ({str(e)[:200]})") from None
        out = []
        for key, t in wanted:
            g = found.get(key)
            if isinstance(g, torch.Tensor) and (g.shape != t.shape or not g.is_floating_point()):
                raise StudentError(f"your code's gradient has shape {tuple(g.shape)}, its input {tuple(t.shape)}")
            out.append(g.to(t.device, t.dtype) if isinstance(g, torch.Tensor) else None)
        return out

    def __del__(self):
        if self.call_id is not None:
            self.session._released_calls.append(self.call_id)


class _RemoteCall(torch.autograd.Function):
    """A call into the sandbox as one node of the grader's autograd graph."""

    @staticmethod
    def forward(ctx, call: _Call, *tensors):
        call.run()
        ctx.call = call
        return (*call.grad_outputs, torch.zeros(()))  # never no output at all

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.call.backward(grads[:-1]))


class RemoteFunction:
    """A function (or any callable) the student defined; a class that is not a torch module (``kind`` "class")."""

    def __init__(self, session: Session, handle: int, name: str, kind: str = "function"):
        self._w2b_session, self._w2b_handle, self._w2b_kind, self.__name__ = session, handle, kind, name
        self._w2b_generation, self.__qualname__ = session.generation, name

    def __call__(self, *args, **kwargs):
        return self._w2b_session.call(self, None, args, kwargs)

    def __repr__(self) -> str:
        return f"<student {self._w2b_kind} {self.__name__}>"


class RemoteObject:
    """An object of the student's that is not data: its methods can be called, nothing else."""

    def __init__(self, session: Session, handle: int, type_name: str):
        self._w2b_session, self._w2b_handle, self._w2b_type = session, handle, type_name
        self._w2b_generation = session.generation

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return RemoteMethod(self, name)

    def __repr__(self) -> str:
        return f"<student object of type {self._w2b_type}>"


class Unreadable:
    """A name whose value could not be read back (reported when a test uses it)."""

    def __init__(self, name: str, why: str):
        self.name, self.why = name, why

    def __call__(self, *args, **kwargs):
        raise UnreadableFailure(f"{self.name} could not be read from your notebook by the grader: {self.why}")


def student_exception(error) -> BaseException:
    """The student's exception, rebuilt as a subclass of its nearest built-in exception type."""
    if type(error) is not dict:
        return SandboxFailure("the sandbox reported an error without saying what it was")
    kinds = [getattr(builtins, str(c), None) for c in error.get("bases") or []]
    kinds = [k for k in kinds if isinstance(k, type) and issubclass(k, Exception) and not issubclass(k, _NEVER)]
    kind = _exception_class(identifier(error.get("type")), next(iter(kinds), Exception))
    exception = kind(str(error.get("message", ""))[:4000])
    exception.student_traceback = str(error.get("traceback", ""))[:20_000]
    return exception


_NEVER = (StopIteration, StopAsyncIteration, Warning)  # built-in types a rebuilt exception never takes
_IN_PLACE = (list, dict, random.Random, torch.Generator)  # written back into the caller's own object, not rebound


@functools.cache
def _exception_class(name: str, base: type) -> type:
    return type(name, (StudentError,) if base is Exception else (base, StudentError), {"__module__": "student"})


def _write_back(original, after) -> None:
    """Make the caller's arguments what the student's code left them (so that tests see mutation)."""
    if isinstance(original, torch.Tensor):
        if isinstance(after, torch.Tensor) and (original.shape != after.shape or not torch.equal(original, after)):
            with torch.no_grad():
                if original.shape == after.shape:
                    original.copy_(after.to(original.device, original.dtype))
                else:
                    original.data = after.to(original.device, original.dtype)
    elif type(original) in (list, tuple) and type(after) is type(original) and len(original) == len(after):
        for i, (a, b) in enumerate(zip(original, after)):
            if type(original) is tuple or isinstance(a, torch.Tensor) or type(a) in _IN_PLACE:
                _write_back(a, b)
            elif a != b or type(a) is not type(b):
                original[i] = b
    elif type(original) is list and type(after) is list:
        original[:] = after
    elif type(original) is dict and type(after) is dict:
        for k, b in after.items():
            if k in original and (isinstance(original[k], torch.Tensor) or type(original[k]) in _IN_PLACE):
                _write_back(original[k], b)
            else:
                original[k] = b
        for k in [k for k in original if k not in after]:
            del original[k]
    elif type(original) is random.Random and type(after) is random.Random:
        original.setstate(after.getstate())
    elif type(original) is torch.Generator and type(after) is torch.Generator:
        original.set_state(after.get_state())


def _device_of(args, kwargs, modules: dict) -> torch.device:
    """The device of a call's tensors (its arguments', then its modules' parameters'), or the CPU."""
    found = []
    _map_tensors((args, kwargs), found.append)
    found += [p for m in modules.values() for p in m._parameters.values() if p is not None]
    return next((t.device for t in found if t.device.type != "cpu"), torch.device("cpu"))


def _map_tensors(value, fn):
    """``value`` with ``fn`` applied to its tensors; a list or dict left the same is kept (it may be an argument)."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if type(value) is list:
        mapped = [_map_tensors(v, fn) for v in value]
        return value if all(a is b for a, b in zip(mapped, value)) else mapped
    if type(value) is tuple:
        return tuple(_map_tensors(v, fn) for v in value)
    if type(value) is dict:
        mapped = {k: _map_tensors(v, fn) for k, v in value.items()}
        return value if all(mapped[k] is v for k, v in value.items()) else mapped
    return value
