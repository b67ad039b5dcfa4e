"""The grader's mirror of a student's ``nn.Module``: a real module whose ``forward`` runs in the sandbox; the
description it is built from is hostile input (names are checked, nothing is imported or run)."""

import re

import torch
from torch import nn

from word2bert_grader.sandbox import wire
from word2bert_grader.sandbox.wire import LOCAL_MODULES


class Mirror:
    """The mirrors of one session's modules and module classes, by (sandbox generation, handle)."""

    def __init__(self, session):
        self.session = session  # calls go through it (:meth:`remote.proxy.Session.call`)
        self._classes: dict[tuple[int, int], type] = {}
        self._mirrors: dict[tuple[int, int], nn.Module] = {}

    def module_class(self, h: int, name: str, base) -> type:
        key = (self.session.generation, h)
        if key not in self._classes:
            # torch's own classes whose forward runs here are bases (isinstance holds); others' forward runs there
            base_cls = getattr(nn, base) if base in LOCAL_MODULES else nn.Module
            members = {"_w2b_class": h, "_w2b_handle": h, "_w2b_session": self.session, "__module__": "student"}
            self._classes[key] = type(name, (RemoteModule, base_cls), {**members, "_w2b_generation": key[0]})
        return self._classes[key]

    def tree(self, tree, decoder) -> nn.Module:
        """Build (or refresh) the mirror of a student module tree from its description."""
        if type(tree) is not dict or type(tree.get("nodes")) is not list:
            raise wire.WireError("a module without its description")
        nodes = {}
        for item in tree["nodes"]:
            if type(item) is not list or len(item) != 2 or not handle_ok(item[0]) or type(item[1]) is not dict:
                raise wire.WireError("a bad module description")
            nodes[item[0]] = item[1]
        built = {h: self._node(h, node, decoder) for h, node in nodes.items()}
        for h, node in nodes.items():
            for child in node.get("children") or []:
                if type(child) is not list or len(child) != 2 or child[1] not in built:
                    raise wire.WireError("a module's child is not described")
                name = _member(child[0])
                built[h].__dict__.pop(name, None)  # as torch's __setattr__: a submodule is never also an attribute
                built[h]._modules[name] = built[child[1]]
        root = built.get(tree.get("root"))
        if root is None:
            raise wire.WireError("a module tree without its root")
        for m in built.values():
            m.__dict__["_w2b_root"] = root if m is not root else None
        return root

    def _node(self, h: int, node: dict, decoder) -> nn.Module:
        key = (self.session.generation, h)
        module = self._mirrors.get(key)
        if module is None:
            builtin = node.get("builtin")
            if builtin in LOCAL_MODULES:
                cls = getattr(nn, builtin)  # torch's own layer: the grader runs its forward itself
            else:
                if not handle_ok(node.get("class")):
                    raise wire.WireError("a student module without its class")
                cls = self.module_class(node["class"], identifier(node.get("name")), node.get("base"))
            module = object.__new__(cls)
            nn.Module.__init__(module)
            module.__dict__.update(_w2b_handle=h, _w2b_session=self.session, _w2b_generation=self.session.generation)
            self._mirrors[key] = module
        module.training = node.get("training") is True
        _load_state(module, node.get("params") or {}, node.get("buffers") or {}, decoder)
        attrs = node.get("attrs") or {}
        if type(attrs) is not dict:
            raise wire.WireError("module attributes are not a dict")
        # a plain attribute never shadows a parameter, buffer or submodule (as torch's __setattr__ keeps them apart:
        # nn.Linear's forward here would compute with it while the tests set the parameter)
        members = {*module._parameters, *module._buffers, *module._modules}
        for k, v in attrs.items():
            k = _attribute(k)
            if not k.startswith("_") and not hasattr(type(module), k) and k not in members:
                module.__dict__[k] = decoder.decode(v)
        methods = node.get("methods") or []
        module.__dict__["_w2b_methods"] = tuple(_attribute(m) for m in methods if type(m) is str)
        return module

    def refresh(self, states, decoder) -> None:
        """Copy the modules' state after a call (the student's code may change parameters or buffers)."""
        for item in states:
            if type(item) is not list or len(item) != 4 or type(item[0]) is not int:
                raise wire.WireError("a bad module state")
            module = self._mirrors.get((self.session.generation, item[0]))
            if module is None:
                continue
            module.training = item[1] is True
            _load_state(module, item[2], item[3], decoder)


class RemoteMethod:
    """A method of a student's object or module, called in the sandbox."""

    def __init__(self, owner, name: str):
        self.owner, self.__name__ = owner, name

    def __call__(self, *args, **kwargs):
        return self.owner._w2b_session.call(self.owner, self.__name__, args, kwargs)


class RemoteModule(nn.Module):
    """Base of every mirror of a student ``nn.Module`` class; ``forward`` runs the student's code."""

    _w2b_class = 0

    def __new__(cls, *args, **kwargs):
        # ``MyModule(...)`` in a test: construct it in the sandbox; the reply builds this mirror.
        return cls._w2b_session.call(cls, None, args, kwargs)

    def __init__(self, *args, **kwargs):
        pass  # built from the sandbox's description, in Mirror.tree

    def forward(self, *args, **kwargs):
        return self._w2b_session.call(self, None, args, kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name in self.__dict__.get("_w2b_methods", ()):
                return RemoteMethod(self, name)
            raise


def _load_state(module: nn.Module, params, buffers, decoder) -> None:
    if type(params) is not dict or type(buffers) is not dict:
        raise wire.WireError("module state is not a dict")
    with torch.no_grad():
        for n, value in params.items():
            n, t = _member(n), decoder.decode(value)
            if not isinstance(t, torch.Tensor):
                raise wire.WireError("a parameter that is not a tensor")
            grad = isinstance(value, dict) and value.get("grad") is True and t.is_floating_point()
            p = module._parameters.get(n)
            if p is None:
                module.register_parameter(n, nn.Parameter(t, requires_grad=grad))
            elif p.shape != t.shape or p.dtype != t.dtype:
                p.data = t.to(p.device)
            elif not torch.equal(p, t):
                p.copy_(t)
            if p is not None and p.requires_grad != grad:
                p.requires_grad_(grad)
        for n, value in buffers.items():
            n, t = _member(n), decoder.decode(value)
            if not isinstance(t, torch.Tensor):
                raise wire.WireError("a buffer that is not a tensor")
            b = module._buffers.get(n)
            if b is None or b.shape != t.shape or b.dtype != t.dtype:
                module.register_buffer(n, t if b is None else t.to(b.device))
            elif not torch.equal(b, t):
                b.copy_(t)


def handle_ok(value) -> bool:
    """A handle is a 64-bit int, as the runner numbers them (no dict of them can be built to be slow)."""
    return type(value) is int and 0 <= value < wire.INT_LIMIT


def identifier(name) -> str:
    name = re.sub(r"\W", "_", str(name))[:80] or "student"
    return name if not name[0].isdigit() else f"_{name}"


def _attribute(name) -> str:
    if type(name) is not str or not name.isidentifier():
        raise wire.WireError(f"not an attribute name: {str(name)[:40]!r}")
    return name


def _member(name) -> str:
    """A submodule, parameter or buffer name as torch allows it ("0" in a Sequential, say)."""
    if type(name) is not str or not name or "." in name or len(name) > 200 or name.startswith("_w2b"):
        raise wire.WireError(f"not a module member name: {str(name)[:40]!r}")
    return name
