"""Helpers for the exercises' tests: they run in the student's kernel (``nbgrader validate``) and in
the grader's trusted process. The grading pipeline itself is not here: it is the instructors'
package ``word2bert_grader``.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@contextlib.contextmanager
def forbid_library_calls(what: str = "your answer"):
    """Fail the enclosing test if any of word2bert's own code runs inside the block.

    Exercises ask students to write what the library already has; an answer that calls (or subclasses)
    the library's counterpart is not the student's own work. A profiler hook sees every Python call,
    however the library function was imported. This is a courtesy check for the student's own kernel:
    when grading, the sandbox that runs the student's code has no word2bert to call at all.
    """
    called = set()

    def profile(frame, event, arg):
        if event == "call":
            filename = frame.f_code.co_filename
            if filename.startswith(_PACKAGE_DIR + os.sep) and filename != __file__:
                module = os.path.relpath(filename, _PACKAGE_DIR)[: -len(".py")].replace(os.sep, ".")
                called.add(f"word2bert.{module}.{frame.f_code.co_name}")

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)
    assert not called, (
        f"{what} runs the course library's own code ({', '.join(sorted(called))}); "
        "the exercise is to write it yourself with torch, random and math."
    )


def assert_frequency(count: int, n: int, p: float, what: str, sigmas: float = 6.0) -> None:
    """Assert that ``count`` successes in ``n`` independent trials fit probability ``p``.

    Six standard deviations (plus a little slack for small counts): a correct implementation fails
    with probability about 2e-9, while the mistakes the tests look for are off by far more.
    """
    expected = n * p
    tolerance = sigmas * math.sqrt(n * p * (1 - p)) + 3
    assert abs(count - expected) <= tolerance, (
        f"{what}: expected about {expected:.0f} of {n} ({p:.2%}), found {count} ({count / n:.2%})"
    )


def assert_draws_from(generator, call, what: str) -> None:
    """Assert that ``call(generator)``, called twice, draws from ``generator`` itself (a ``torch.Generator`` or a
    ``random.Random``): the two results differ, and each call moves the generator on to a state it never had.

    "The same seed, the same result" and "another seed, another result" also hold for an answer that reseeds the
    global RNG from the generator, or that reseeds the generator or sets its state back: such an answer repeats its
    draws from call to call (a generation loop passes one generator to every step, a pre-training run to every
    batch). Drawing from the generator never reseeds it nor returns it to an earlier state.
    """
    import torch

    def state(g):
        return g.get_state() if isinstance(g, torch.Generator) else g.getstate()

    def same(a, b) -> bool:
        return torch.equal(a, b) if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) else a == b

    def seed(g):
        return g.initial_seed() if isinstance(g, torch.Generator) else None

    seeds, states, results = [seed(generator)], [state(generator)], []
    for _ in range(2):
        results.append(call(generator))
        seeds.append(seed(generator))
        states.append(state(generator))
    assert not same(*results), (
        f"{what}: two calls with one generator gave the same result. Draw from the generator you are handed, so "
        "that each call moves it on (reseeding the global RNG from it repeats the same draws)"
    )
    assert seeds.count(seeds[0]) == len(seeds), (
        f"{what}: the generator you are handed was reseeded. Draw from it; never call its manual_seed"
    )
    assert not any(same(a, b) for i, a in enumerate(states) for b in states[i + 1 :]), (
        f"{what}: the generator you are handed went back to a state it had before. Draw from it; never set its state"
    )


@contextlib.contextmanager
def forbid_torch_functions(*functions, what: str = "your answer"):
    """Fail the enclosing test if any of torch's ``functions`` (e.g. ``F.scaled_dot_product_attention``) runs
    inside the block, however it was reached: a torch function mode sees every call to a torch function.

    Like :func:`forbid_library_calls`, a courtesy check for the student's own kernel: when grading, the student's
    code runs in the sandbox, out of this mode's sight, so the tests must make the point by other means too.
    """
    from torch.overrides import TorchFunctionMode

    called = set()

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func in functions:
                called.add(func.__name__)
            return func(*args, **(kwargs or {}))

    with Watch():
        yield
    assert not called, f"{what} calls {', '.join(sorted(called))}; the exercise is to write it out yourself."


def randomise_parameters(module, seed: int) -> None:
    """Give every parameter of ``module`` random values drawn here (normal, scaled by 1 / sqrt of its last size).

    A test of a layer's formula that reads the layer's own initial weights can be passed by a wrong formula
    whose weights start where the two agree (a Highway layer whose Linear layers start at zero returns x / 2
    whatever the gate does). With weights the test chose, no initialisation can.
    """
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            size = p.shape[-1] if p.dim() else 1
            values = torch.randn(p.shape, generator=generator, dtype=torch.float64) / math.sqrt(max(size, 1))
            p.copy_(values.to(p.dtype))
