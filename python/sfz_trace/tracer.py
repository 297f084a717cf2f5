"""sfz's tracer: runs a user's PyTorch script under a TorchFunctionMode and writes, as JSON,
every torch operation it performed (between the markers of `sfz_trace`, or all of them up to a
bound): the function, its arguments (tensors as references, with dtype, shape and value
statistics), its outputs and the user's file and line that called it. Under each call, a
TorchDispatchMode records the ATen operators it ran (schema name, arguments in schema order,
outputs), so that a call sfz's op table cannot express replays as those operators.

Usage: python -m sfz_trace.tracer OUT.json MAX_OPS SCRIPT [ARGS...]
"""
import ast
import json
import linecache
import os
import runpy
import sys
import traceback

import sfz_trace

_HERE = os.path.dirname(os.path.abspath(__file__))


class _Stop(BaseException):
    """Raised into the script to stop it once the trace is complete (end marker, op bound)."""


def _stats(t):
    import torch

    info = {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape)}
    # What training changes: a leaf that requires grad (a weight, an nn.Parameter).
    if t.requires_grad and t.is_leaf:
        info["trainable"] = True
    if t.is_floating_point() or t.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8):
        x = t.detach().to("cpu", torch.float64)
        finite = x[torch.isfinite(x)]
        info["nan"] = int(torch.isnan(x).sum())
        info["inf"] = int(torch.isinf(x).sum())
        info["min"] = float(finite.min()) if finite.numel() else 0.0
        info["max"] = float(finite.max()) if finite.numel() else 0.0
    return info


class Recorder:
    def __init__(self, script, max_ops):
        self.script = os.path.abspath(script)
        self.max_ops = max_ops
        self.ops = []
        self.values = []  # value index -> stats
        self.ids = {}  # id(tensor) -> value index
        self.keep = []  # tensors kept alive so that ids are not reused
        self.marked = False  # start() was called
        self.recording = True  # whole script until a marker says otherwise
        self.ended = False
        self.skipped = 0
        self.truncated = False
        self.backward = False
        self.current = {}  # loose key -> value, for the ATen outputs of the call being recorded

    # Markers.
    def start(self):
        if not self.marked:
            # Markers in use: forget what was recorded before the first start().
            self.marked = True
            self.ops, self.values, self.ids, self.keep = [], [], {}, []
        self.recording = True

    def end(self):
        if self.marked and self.recording:
            self.recording = False
            self.ended = True
            raise _Stop()

    @staticmethod
    def _key(t):
        # The same values, whichever Python object holds them: autograd re-wraps views, so object
        # identity is lost between the ATen level and Python. Memory, geometry and the version
        # counter (bumped by every in-place write) name a value; kept tensors are never freed,
        # so their memory is not reused.
        try:
            if t.numel() > 0 and t.layout == __import__("torch").strided:
                return (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype, t._version)
        except Exception:
            pass
        return ("id", id(t))

    def begin(self):
        """A recorded call starts: its ATen operators' outputs are matched loosely."""
        self.current = {}

    def _name(self, t):
        """The script's name for a weight: a variable holding it, or a module's parameter path
        (`model.fc.weight`), looked up in the user's frames; None when no name holds it."""
        import torch

        scopes, f = [], sys._getframe(1)
        torch_dir = os.path.dirname(torch.__file__)
        while f is not None:
            name = os.path.abspath(f.f_code.co_filename)
            if not name.startswith(torch_dir) and not name.startswith(_HERE) and not name.startswith("<"):
                scopes.append(f.f_locals)
                scopes.insert(0, f.f_globals)  # the script's global names first: `model.fc.weight`
            f = f.f_back
        for scope in scopes:
            for var, v in list(scope.items()):
                if v is t:
                    return var
                if isinstance(v, torch.nn.Module):
                    for path, p in v.named_parameters():
                        if p is t:
                            return f"{var}.{path}"
        return None

    def _made_from_nothing(self, op):
        """Whether value-producing call `op` took no tensor (a factory, a sampler)."""
        if op is None or op >= len(self.ops):
            return False

        def tensor(a):
            if isinstance(a, dict):
                return "t" in a or any(tensor(x) for x in a.get("list", []))
            return False

        entry = self.ops[op]
        return not any(tensor(a) for a in list(entry["args"]) + list(entry["kwargs"].values()))

    def _value(self, t, produced=None, sub=False):
        key = self._key(t)
        # Below autograd a view has its own version counter and autograd re-wraps it: within
        # one call, the version is left out to match the values its ATen operators made.
        loose = key[:-1] if key[0] != "id" else key
        if produced is None or not sub:
            idx = self.ids.get(key) if produced is None else None
            if idx is None:
                idx = self.current.get(loose)
            if idx is not None:
                self.ids[key] = idx
                v = self.values[idx]
                if t.requires_grad and t.is_leaf and not v.get("trainable"):
                    v["trainable"] = True
                    v["name"] = self._name(t)
                elif produced is None and not sub and "name" not in v and self._made_from_nothing(v["op"]):
                    # A factory's or sampler's output is bound to its name by the time a call
                    # uses it (`x = torch.rand(4)`; `f(x)`): `sfz hunt --fix x` names it.
                    v["name"] = self._name(t)
                return idx
        idx = len(self.values)
        s = _stats(t)
        s["op"] = produced  # None: an input of the trace
        if s.get("trainable") or (produced is None and not sub):
            s["name"] = self._name(t)
        self.values.append(s)
        self.ids[key] = idx
        if sub:
            self.current[loose] = idx
        self.keep.append(t)
        return idx

    def _arg(self, a):
        import torch

        if isinstance(a, torch.Tensor):
            return {"t": self._value(a)}
        if isinstance(a, bool) or a is None or isinstance(a, (int, float, str)):
            return a
        if isinstance(a, torch.dtype):
            return {"dtype": str(a).replace("torch.", "")}
        if isinstance(a, (list, tuple)) and all(isinstance(x, int) and not isinstance(x, bool) for x in a):
            return {"ints": list(a)}
        if isinstance(a, torch.SymInt):
            return int(a)
        if isinstance(a, (torch.device, torch.layout, torch.memory_format)):
            return {"other": type(a).__name__}
        if isinstance(a, (list, tuple)):
            return {"list": [self._arg(x) for x in a]}
        return {"other": type(a).__name__}

    def _where(self, depth=2):
        # The innermost frame outside torch and this package: the user's line.
        f = sys._getframe(depth)
        torch_dir = os.path.dirname(sys.modules["torch"].__file__)
        while f is not None:
            name = os.path.abspath(f.f_code.co_filename)
            if not name.startswith(torch_dir) and not name.startswith(_HERE) and not name.startswith("<"):
                return name, f.f_lineno, linecache.getline(name, f.f_lineno).strip()
            f = f.f_back
        return None, 0, ""

    def _internal(self, depth=2):
        # Optimizers, data loading and initialisation run torch ops of their own: not the model's.
        f = sys._getframe(depth)
        while f is not None:
            n = f.f_code.co_filename.replace(os.sep, "/")
            if "/torch/optim/" in n or "/torch/utils/data/" in n or "/torch/nn/init" in n:
                return True
            if "/torch/" not in n and _HERE not in n:
                return False
            f = f.f_back
        return False

    def active(self, func):
        """Whether a call about to run will be recorded (its ATen operators with it)."""
        return self.recording and getattr(func, "__name__", "") != "backward" and not self._internal(3)

    def aten(self, func, args, kwargs, out, calls):
        """One ATen operator run under the call being recorded (its index will be len(ops))."""
        import torch

        schema = func._schema
        kwargs = kwargs or {}
        given, defaulted, why = [], [], None
        for i, a in enumerate(schema.arguments):
            if i < len(args):
                v = args[i]
            elif a.name in kwargs:
                v = kwargs[a.name]
            elif a.has_default_value():
                given.append(self._arg(a.default_value))
                defaulted.append(i)
                continue
            else:
                why = why or f"no value for `{a.name}`"
                given.append(None)
                continue
            # What a program cannot hold: a device/layout where None would not do.
            if isinstance(v, (torch.device, torch.layout, torch.memory_format)) and not isinstance(a.type, torch.OptionalType):
                why = why or f"a {type(v).__name__} argument `{a.name}`"
            given.append(self._arg(v))
        # Trailing defaults are left to the operator.
        while given and len(given) - 1 in defaulted:
            given.pop()
        # Keyword-only arguments come last in a schema; Python passes them by name.
        keywords = [a.name for a in schema.arguments[: len(given)] if a.kwarg_only]
        outs = []
        for o in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(o, (tuple, list)):
                outs.extend(o)
            else:
                outs.append(o)
        k = len(self.ops)
        calls.append(
            {
                "name": schema.name,
                "overload": schema.overload_name,
                "args": given,
                "outputs": [self._value(o, produced=k, sub=True) if isinstance(o, torch.Tensor) else None for o in outs],
                "random": torch.Tag.nondeterministic_seeded in getattr(func, "tags", ()),
                "unreplayable": why,
                "keywords": keywords,
            }
        )

    def record(self, func, args, kwargs, out, calls=()):
        import torch

        if not self.recording or self._internal():
            return
        if getattr(func, "__name__", "") == "backward" and not self.marked:
            # Without markers, one training step is the forward up to the first backward().
            self.recording = False
            self.backward = True
            raise _Stop()
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
        module = getattr(func, "__module__", None) or ""
        if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            name = "torch.ops." + str(func)  # `torch.ops.prims.convert_element_type`
        elif name.startswith("_VariableFunctionsClass.") or (module.startswith("torch._C") and not name.startswith("TensorBase.")):
            name = "torch." + name.split(".")[-1]
        elif name.startswith("TensorBase.") or name.startswith("_TensorBase."):
            name = "Tensor." + name.split(".")[-1]
        elif not name.startswith("Tensor."):
            name = (module + "." + name) if module else name
        if name in ("Tensor.__get__", "Tensor.__set__") or name.endswith(".__get__") or name.endswith(".__set__"):
            return  # attribute reads (x.shape, x.grad)
        file, line, code = self._where()
        entry = {
            "func": name,
            "args": [self._arg(a) for a in args],
            "kwargs": {k: self._arg(v) for k, v in (kwargs or {}).items()},
            "file": file,
            "line": line,
            "code": code,
        }
        outs = out if isinstance(out, (tuple, list)) else (out,)
        k = len(self.ops)
        entry["outputs"] = [self._value(o, produced=k) if isinstance(o, torch.Tensor) else None for o in outs]
        if calls:
            entry["aten"] = list(calls)
        self.ops.append(entry)
        if len(self.ops) >= self.max_ops:
            self.truncated = True
            self.recording = False
            raise _Stop()


def _imports_torch(script):
    try:
        tree = ast.parse(open(script).read())
    except (OSError, SyntaxError):
        return True  # the run reports it
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "torch" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch":
            return True
    return False


def main():
    out_path, max_ops, script = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    result = {"script": os.path.abspath(script), "status": "ok", "error": None}
    if not os.path.isfile(script):
        result.update(status="error", error="cannot read the script: no such file")
        json.dump(result, open(out_path, "w"))
        return
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    rec = Recorder(script, max_ops)
    sfz_trace._hooks = rec

    class Aten(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            try:
                rec.aten(func, args, kwargs, out, self.calls)
            except Exception:
                self.calls.append({"name": str(func), "overload": "", "args": [], "outputs": [], "random": False, "error": True})
            return out

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if rec.active(func):
                rec.begin()
                with Aten() as aten:
                    out = func(*args, **(kwargs or {}))
                rec.record(func, args, kwargs, out, aten.calls)
            else:
                out = func(*args, **(kwargs or {}))
                rec.record(func, args, kwargs, out)
            return out

    sys.argv = [script] + sys.argv[4:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    stopped = False
    try:
        with Mode():
            runpy.run_path(script, run_name="__main__")
    except _Stop:
        stopped = True
    except SystemExit as e:
        if e.code not in (None, 0):
            result["status"] = "raised"
            result["error"] = f"the script exited with status {e.code}"
    except BaseException as e:
        # The script's own frames only: the tracer and runpy are not the user's concern.
        te = traceback.TracebackException.from_exception(e)
        te.stack = traceback.StackSummary.from_list(
            [f for f in te.stack if not f.filename.startswith(_HERE) and not f.filename.startswith("<frozen")]
        )
        tb = "".join(te.format())
        result["status"] = "raised"
        result["error"] = tb
    result.update(
        ops=rec.ops,
        values=rec.values,
        marked=rec.marked,
        ended=rec.ended,
        truncated=rec.truncated,
        backward=rec.backward,
        stopped=stopped,
        imports_torch=_imports_torch(script),
    )
    with open(out_path, "w") as f:
        json.dump(result, f, allow_nan=False, default=str)


if __name__ == "__main__":
    main()
