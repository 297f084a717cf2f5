// The one piece of C++ in sfz: what tch does not expose of libtorch.
//
//  - the catalog: every operator the dispatcher knows, with its schema string;
//  - boxed calls by operator handle, so that any ATen operator is callable by name with no
//    generated binding (arguments are type-checked against the schema first: an unchecked boxed
//    call raises false "INTERNAL ASSERT FAILED" errors);
//  - error capture without the C++ backtrace (formatting one costs ~7 ms per failing call);
//  - outputs flattened into a list of tensors and scalars that Rust reads back, with the
//    statistics oracles need (NaN/inf counts, finite range) computed here in one pass;
//  - test-only operators (`sfz_test::*`) that crash, hang, exhaust memory or fail an internal
//    assert through the real dispatcher, so the supervisor's detection can be tested end to end.
//
// No C++ exception may cross into Rust: every entry point catches everything.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <c10/util/Exception.h>
#include <c10/util/Logging.h>
#include <c10/core/GradMode.h>
#include <torch/headeronly/version.h>
#include <torch/library.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <sstream>
#include <thread>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

namespace {

char* dup_string(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out != nullptr) {
    std::memcpy(out, s.data(), s.size());
    out[s.size()] = '\0';
  }
  return out;
}

std::vector<c10::OperatorName>& all_ops() {
  static std::vector<c10::OperatorName> ops = c10::Dispatcher::singleton().getAllOpNames();
  return ops;
}

// Error classes reported to Rust; keep in sync with `runtime::ffi::ErrorClass`.
enum ErrorClass : int32_t {
  kOk = 0,
  kSchemaMismatch = 1,
  kC10Error = 2,
  kIndexError = 3,
  kValueError = 4,
  kTypeError = 5,
  kNotImplemented = 6,
  kLinAlgError = 7,
  kOutOfMemory = 8,
  kEnforceFinite = 9,
  kBadAlloc = 20,
  kOutOfRange = 21,
  kInvalidArgument = 22,
  kStdException = 23,
  kUnknown = 30,
};

// The output of one call, flattened. Tensors are kept alive here until the next call.
struct Output {
  int32_t kind;  // 0 tensor, 1 int, 2 double, 3 bool, 4 none, 5 other
  int64_t tensor_index;
  int64_t i;
  double d;
};

struct Call {
  torch::jit::Stack stack;
  std::vector<at::Tensor> out_tensors;
  std::vector<Output> outputs;
  std::string error;
};

void flatten(const c10::IValue& v, Call* call, int depth) {
  Output o{5, -1, 0, 0.0};
  if (v.isTensor()) {
    o.kind = 0;
    o.tensor_index = static_cast<int64_t>(call->out_tensors.size());
    call->out_tensors.push_back(v.toTensor());
  } else if (v.isInt()) {
    o.kind = 1;
    o.i = v.toInt();
  } else if (v.isDouble()) {
    o.kind = 2;
    o.d = v.toDouble();
  } else if (v.isBool()) {
    o.kind = 3;
    o.i = v.toBool() ? 1 : 0;
  } else if (v.isNone()) {
    o.kind = 4;
  } else if (depth < 4 && v.isTuple()) {
    for (const auto& e : v.toTupleRef().elements()) flatten(e, call, depth + 1);
    return;
  } else if (depth < 4 && v.isList()) {
    for (const auto& e : v.toListRef()) flatten(e, call, depth + 1);
    return;
  }
  call->outputs.push_back(o);
}

template <typename F>
int32_t guarded(Call* call, F&& f) {
  try {
    f();
    return kOk;
  } catch (const c10::OutOfMemoryError& e) {
    call->error = e.what_without_backtrace();
    return kOutOfMemory;
  } catch (const c10::IndexError& e) {
    call->error = e.what_without_backtrace();
    return kIndexError;
  } catch (const c10::ValueError& e) {
    call->error = e.what_without_backtrace();
    return kValueError;
  } catch (const c10::TypeError& e) {
    call->error = e.what_without_backtrace();
    return kTypeError;
  } catch (const c10::NotImplementedError& e) {
    call->error = e.what_without_backtrace();
    return kNotImplemented;
  } catch (const c10::LinAlgError& e) {
    call->error = e.what_without_backtrace();
    return kLinAlgError;
  } catch (const c10::EnforceFiniteError& e) {
    call->error = e.what_without_backtrace();
    return kEnforceFinite;
  } catch (const c10::Error& e) {
    call->error = e.what_without_backtrace();
    return kC10Error;
  } catch (const std::bad_alloc& e) {
    call->error = e.what();
    return kBadAlloc;
  } catch (const std::out_of_range& e) {
    call->error = e.what();
    return kOutOfRange;
  } catch (const std::invalid_argument& e) {
    call->error = e.what();
    return kInvalidArgument;
  } catch (const std::exception& e) {
    call->error = std::string(typeid(e).name()) + ": " + e.what();
    return kStdException;
  } catch (...) {
    call->error = "unknown C++ exception";
    return kUnknown;
  }
}


// Per-tensor facts for the oracles; keep in sync with `runtime::ffi::SfzTensorInfo`.
struct TensorInfo {
  int32_t defined;      // 0 for an undefined tensor (e.g. an absent gradient)
  int32_t scalar_type;  // c10::ScalarType, -1 when not readable
  int32_t stats;        // 1 when nan/inf/min/max below were computed
  int32_t has_minmax;   // 1 when some element (component, for complex) is finite
  int64_t ndim;
  int64_t nan;
  int64_t inf;
  double min;
  double max;
};

void see_finite(TensorInfo* info, double v) {
  if (!info->has_minmax) {
    info->min = v;
    info->max = v;
    info->has_minmax = 1;
  } else {
    if (v < info->min) info->min = v;
    if (v > info->max) info->max = v;
  }
}

template <typename T>
void scan_real(const T* p, int64_t n, TensorInfo* info) {
  for (int64_t k = 0; k < n; ++k) {
    double v = static_cast<double>(p[k]);
    if (std::isnan(v)) {
      info->nan++;
    } else if (std::isinf(v)) {
      info->inf++;
    } else {
      see_finite(info, v);
    }
  }
}

// As torch.isnan / torch.isinf do for complex: an element is NaN (inf) when either part is.
template <typename T>
void scan_complex(const c10::complex<T>* p, int64_t n, TensorInfo* info) {
  for (int64_t k = 0; k < n; ++k) {
    double re = static_cast<double>(p[k].real());
    double im = static_cast<double>(p[k].imag());
    if (std::isnan(re) || std::isnan(im)) info->nan++;
    if (std::isinf(re) || std::isinf(im)) info->inf++;
    if (std::isfinite(re)) see_finite(info, re);
    if (std::isfinite(im)) see_finite(info, im);
  }
}

template <typename T>
void scan_int(const T* p, int64_t n, TensorInfo* info) {
  if (n == 0) return;
  T lo = p[0], hi = p[0];
  for (int64_t k = 1; k < n; ++k) {
    if (p[k] < lo) lo = p[k];
    if (p[k] > hi) hi = p[k];
  }
  info->min = static_cast<double>(lo);
  info->max = static_cast<double>(hi);
  info->has_minmax = 1;
}

void tensor_stats(const at::Tensor& t, TensorInfo* info) {
  if (t.layout() != c10::kStrided || !t.device().is_cpu() || t.is_quantized() || t.is_nested()) return;
  at::Tensor c = t.contiguous();
  const int64_t n = c.numel();
  const void* data = c.const_data_ptr();
  if (n > 0 && data == nullptr) return;
  switch (c.scalar_type()) {
    case c10::kFloat: scan_real(static_cast<const float*>(data), n, info); break;
    case c10::kDouble: scan_real(static_cast<const double*>(data), n, info); break;
    case c10::kHalf: scan_real(static_cast<const c10::Half*>(data), n, info); break;
    case c10::kBFloat16: scan_real(static_cast<const c10::BFloat16*>(data), n, info); break;
    case c10::kComplexFloat: scan_complex(static_cast<const c10::complex<float>*>(data), n, info); break;
    case c10::kComplexDouble: scan_complex(static_cast<const c10::complex<double>*>(data), n, info); break;
    case c10::kByte: scan_int(static_cast<const uint8_t*>(data), n, info); break;
    case c10::kChar: scan_int(static_cast<const int8_t*>(data), n, info); break;
    case c10::kShort: scan_int(static_cast<const int16_t*>(data), n, info); break;
    case c10::kInt: scan_int(static_cast<const int32_t*>(data), n, info); break;
    case c10::kLong: scan_int(static_cast<const int64_t*>(data), n, info); break;
    case c10::kBool: scan_int(static_cast<const uint8_t*>(data), n, info); break;
    default: return;
  }
  info->stats = 1;
}

// Test-only operators. Each misbehaves in one way a real kernel bug could.
// Says so on stderr first, which lets tests check that crash reports carry the stderr tail.
void test_raise_signal(int64_t sig) {
  std::fprintf(stderr, "sfz_test: raising signal %d\n", static_cast<int>(sig));
  std::fflush(stderr);
  std::raise(static_cast<int>(sig));
}

// A real invalid memory access, not a raised signal.
void test_segfault() {
  volatile int* p = nullptr;
  *p = 1;
}

// One overrun, two deaths, as a real one shows: `how` 0 writes over its heap chunk's header,
// which glibc notices at the free (SIGABRT, "free(): invalid size"); 1 writes through a wild
// pointer first (SIGSEGV). Both die in this function.
void test_overrun(int64_t how) {
  auto* buf = static_cast<uint64_t*>(std::malloc(32));
  if (how == 1) {
    volatile uint64_t* wild = reinterpret_cast<uint64_t*>(uintptr_t{8});
    *wild = 1;
  }
  volatile uint64_t* header = buf - 1;
  *header = 0xdeadbeef;
  std::free(buf);
  // Not a tail call, in an optimized build too: the abort in free must find this frame above it.
  asm volatile("" ::: "memory");
}

void test_spin(int64_t ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  volatile uint64_t spins = 0;
  while (std::chrono::steady_clock::now() < end) spins = spins + 1;
}

// Damage that shows after the call returned, as a corrupted heap noticed at a later free: the
// call returns at once, and `ms` later a thread of its own aborts the process.
void test_late_abort(int64_t ms) {
  std::thread([ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    std::abort();
  }).detach();
}

// Touches every byte, so the memory is really committed (not just reserved).
at::Tensor test_alloc(int64_t mb) { return at::ones({mb * (int64_t{1} << 20)}, at::kByte); }

void test_internal_assert() { TORCH_INTERNAL_ASSERT(false, "sfz_test::internal_assert was called"); }

void test_exit(int64_t code) { std::_Exit(static_cast<int>(code)); }

// A bug whose crash shows one call late, like a heap overflow the allocator notices at a later
// free: a call with `arm == 3` on 4+ elements taints the process, and a later call with
// `arm == 3` (of any size) dies. No single call dies.
static bool tainted = false;

at::Tensor test_taint(const at::Tensor& self, int64_t arm) {
  if (arm == 3) {
    if (tainted) std::raise(SIGSEGV);
    if (self.numel() >= 4) tainted = true;
  }
  return self.clone();
}

// An innocent op that meets the damage `taint` did: it dies in a tainted process only.
at::Tensor test_fragile(const at::Tensor& self) {
  if (tainted) std::raise(SIGSEGV);
  return self.clone();
}

// One defect, two outcomes, as `linalg.eigvals` on a NaN (MKL's ?GEBAL rejects it, which
// libtorch reports as a failed internal assert, or reads uninitialised memory and segfaults):
// the first call in a process fails an internal assert and damages the heap; any later call
// dies by SIGSEGV, saying so first.
static bool wobbled = false;

at::Tensor test_wobbly(const at::Tensor& self) {
  if (wobbled) {
    std::fprintf(stderr, "sfz_test::wobbly: the heap is damaged\n");
    std::fflush(stderr);
    std::raise(SIGSEGV);
  }
  wobbled = true;
  TORCH_INTERNAL_ASSERT(false, "sfz_test::wobbly: illegal value");
  return self.clone();
}

// Work in proportion to `n`: a huge `n` runs for ages, as a polynomial of degree 2^62 does.
at::Tensor test_grind(const at::Tensor& self, int64_t n) {
  volatile int64_t sink = 0;
  for (int64_t i = 0; i < n; i++) sink = sink + i;
  return self.clone();
}

// A hang that is a bug: a negative `n` never ends, whatever its size.
at::Tensor test_stuck(const at::Tensor& self, int64_t n) {
  volatile int64_t sink = 0;
  while (n < 0) sink = sink + 1;
  return self.clone();
}

// A planted family of differential bugs, one per `bug` value, on y = x * x:
//   1: wrong for non-contiguous inputs          2: wrong in float32 (off by 0.1%)
//   3: the out= overload writes y + 1           4: the in-place form writes y - 1
//   5: the out= overload raises                 6: backward says 3x instead of 2x
//   7: the out= overload segfaults              8: the in-place form taints the process (see
//                                                   `taint`) and the out= overload dies in it
//   9: the in-place form taints the process and dies in a tainted one (its second call)
//  10: backward is NaN at x = 1 (it divides by x - 1)
// Any other value is correct everywhere.
at::Tensor test_buggy(const at::Tensor& self, int64_t bug) {
  at::Tensor r = self * self;
  if (bug == 1 && !self.is_contiguous()) r = r + 1;
  if (bug == 2 && self.scalar_type() == at::kFloat) r = r * 1.001;
  return r;
}

at::Tensor& test_buggy_out(const at::Tensor& self, int64_t bug, at::Tensor& out) {
  TORCH_CHECK(bug != 5, "sfz_test::buggy.out refuses bug 5");
  if (bug == 8 && tainted) std::raise(SIGSEGV);
  if (bug == 7) {
    int* volatile p = nullptr;  // the pointer itself volatile: the compiler may not drop the write
    *p = 1;
  }
  at::Tensor r = test_buggy(self, bug);
  if (bug == 3) r = r + 1;
  out.resize_(r.sizes());
  out.copy_(r);
  return out;
}

at::Tensor& test_buggy_(at::Tensor& self, int64_t bug) {
  at::Tensor r = test_buggy(self, bug);
  if (bug == 4) r = r - 1;
  if (bug == 8) tainted = true;
  if (bug == 9) {
    if (tainted) std::raise(SIGSEGV);
    tainted = true;
  }
  self.copy_(r);
  return self;
}

struct BuggyFunction : public torch::autograd::Function<BuggyFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, int64_t bug) {
    ctx->save_for_backward({x});
    ctx->saved_data["bug"] = bug;
    at::AutoDispatchBelowADInplaceOrView guard;
    return test_buggy(x, bug);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
    auto x = ctx->get_saved_variables()[0];
    auto bug = ctx->saved_data["bug"].toInt();
    double factor = bug == 6 ? 3.0 : 2.0;
    // Bug 10: a formula that divides by zero at x = 1, where the derivative is 2.
    if (bug == 10) return {grads[0] * x * factor * (x - 1) / (x - 1), at::Tensor()};
    return {grads[0] * x * factor, at::Tensor()};
  }
};

at::Tensor test_buggy_autograd(const at::Tensor& self, int64_t bug) { return BuggyFunction::apply(self, bug); }

}  // namespace

TORCH_LIBRARY(sfz_test, m) {
  m.def("buggy(Tensor self, int bug) -> Tensor");
  m.def("buggy.out(Tensor self, int bug, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("buggy_(Tensor(a!) self, int bug) -> Tensor(a!)");
  m.def("raise_signal(int sig) -> ()", &test_raise_signal);
  m.def("segfault() -> ()", &test_segfault);
  m.def("overrun(int how) -> ()", &test_overrun);
  m.def("spin(int ms) -> ()", &test_spin);
  m.def("alloc(int mb) -> Tensor", &test_alloc);
  m.def("internal_assert() -> ()", &test_internal_assert);
  m.def("exit(int code) -> ()", &test_exit);
  m.def("taint(Tensor self, int arm) -> Tensor", &test_taint);
  m.def("fragile(Tensor self) -> Tensor", &test_fragile);
  m.def("grind(Tensor self, int n) -> Tensor", &test_grind);
  m.def("stuck(Tensor self, int n) -> Tensor", &test_stuck);
  m.def("wobbly(Tensor self) -> Tensor", &test_wobbly);
  m.def("late_abort(int ms) -> ()", &test_late_abort);
}

TORCH_LIBRARY_IMPL(sfz_test, CPU, m) {
  m.impl("buggy", &test_buggy);
  m.impl("buggy.out", &test_buggy_out);
  m.impl("buggy_", &test_buggy_);
}

TORCH_LIBRARY_IMPL(sfz_test, Autograd, m) { m.impl("buggy", &test_buggy_autograd); }

namespace {
}  // namespace

extern "C" {

// Once per worker: no backtraces in errors (the 7 ms trap), one intra-op thread (a worker is a
// single-threaded executor; parallelism comes from running several workers), no autograd.
void sfz_init(int32_t threads) {
  c10::SetStackTraceFetcher([]() -> std::string { return std::string(); });
  if (threads > 0) {
    at::set_num_threads(threads);
  }
  c10::GradMode::set_enabled(false);
}

// Once a CUDA check finds a device: no TF32 in cuBLAS or cuDNN, so float32 on the GPU is
// float32 (a CUDA comparison against the CPU would otherwise see TF32's 10-bit mantissa).
void sfz_cuda_strict() {
  try {
    at::globalContext().setAllowTF32CuBLAS(false);
    at::globalContext().setAllowTF32CuDNN(false);
  } catch (...) {
  }
}

// Uninitialised memory poisoned (NaN, or an integer type's largest value) in every `empty`
// and `resize_` ATen makes, as `torch.use_deterministic_algorithms(True, warn_only=True)` does:
// an output a kernel leaves unwritten shows as poison. Off again with false.
void sfz_poison_uninitialised(bool on) {
  try {
    at::globalContext().setDeterministicAlgorithms(on, /*warn_only=*/true);
    at::globalContext().setDeterministicFillUninitializedMemory(true);
  } catch (...) {
  }
}

int64_t sfz_op_count() { return static_cast<int64_t>(all_ops().size()); }

// The schema of the i-th operator as text, e.g. "aten::add.Tensor(Tensor self, ...) -> Tensor".
// The caller frees it with sfz_free. Null when i is out of range or the operator vanished.
char* sfz_op_schema(int64_t i) {
  auto& ops = all_ops();
  if (i < 0 || static_cast<size_t>(i) >= ops.size()) return nullptr;
  try {
    auto handle = c10::Dispatcher::singleton().findOp(ops[i]);
    if (!handle.has_value() || !handle->hasSchema()) return nullptr;
    std::ostringstream out;
    out << handle->schema();
    return dup_string(out.str());
  } catch (...) {
    return nullptr;
  }
}

// Whether the i-th operator has a kernel for the CPU key once the dispatch table is computed
// (a composite kernel counts): 1 yes, 0 no (`aten::addmm.dtype` is CUDA-only), -1 unknown.
int32_t sfz_op_cpu_kernel(int64_t i) {
  auto& ops = all_ops();
  if (i < 0 || static_cast<size_t>(i) >= ops.size()) return -1;
  try {
    auto handle = c10::Dispatcher::singleton().findOp(ops[i]);
    if (!handle.has_value()) return -1;
    return handle->hasComputedKernelForDispatchKey(c10::DispatchKey::CPU) ? 1 : 0;
  } catch (...) {
    return -1;
  }
}

void sfz_free(char* p) { std::free(p); }

// A handle to "name.overload" (overload "" for the default), or null with *err set.
void* sfz_op_find(const char* name, const char* overload, char** err) {
  try {
    auto handle = c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
    return new c10::OperatorHandle(handle);
  } catch (const c10::Error& e) {
    *err = dup_string(e.what_without_backtrace());
  } catch (const std::exception& e) {
    *err = dup_string(e.what());
  }
  return nullptr;
}

// The schema of a resolved handle, printed as the catalog prints it; the caller frees it.
char* sfz_op_handle_schema(void* op) {
  try {
    std::ostringstream out;
    out << static_cast<c10::OperatorHandle*>(op)->schema();
    return dup_string(out.str());
  } catch (...) {
    return nullptr;
  }
}

// A forward-mode AD level (`torch.autograd.forward_ad.dual_level` in Python): the level's
// index, or -1 when libtorch refuses (a level is already open on this thread).
int64_t sfz_enter_dual_level() {
  try {
    return static_cast<int64_t>(torch::autograd::forward_ad::enter_dual_level());
  } catch (...) {
    return -1;
  }
}

// Leaves the level: dual tensors of it become plain tensors again.
void sfz_exit_dual_level(int64_t level) {
  try {
    torch::autograd::forward_ad::exit_dual_level(static_cast<uint64_t>(level));
  } catch (...) {
  }
}

// The libtorch version the shim was compiled against ("2.13.0"); static storage.
const char* sfz_torch_version() { return TORCH_VERSION; }

void sfz_op_free(void* op) { delete static_cast<c10::OperatorHandle*>(op); }

int64_t sfz_op_num_arguments(void* op) {
  return static_cast<int64_t>(static_cast<c10::OperatorHandle*>(op)->schema().arguments().size());
}

void* sfz_call_new() { return new Call(); }
void sfz_call_free(void* c) { delete static_cast<Call*>(c); }

void sfz_call_reset(void* c) {
  auto* call = static_cast<Call*>(c);
  call->stack.clear();
  call->out_tensors.clear();
  call->outputs.clear();
  call->error.clear();
}

void sfz_push_tensor(void* c, const at::Tensor* t) { static_cast<Call*>(c)->stack.emplace_back(*t); }
void sfz_push_none(void* c) { static_cast<Call*>(c)->stack.emplace_back(); }
void sfz_push_int(void* c, int64_t v) { static_cast<Call*>(c)->stack.emplace_back(v); }
void sfz_push_double(void* c, double v) { static_cast<Call*>(c)->stack.emplace_back(v); }
void sfz_push_bool(void* c, bool v) { static_cast<Call*>(c)->stack.emplace_back(v); }
void sfz_push_str(void* c, const char* s) { static_cast<Call*>(c)->stack.emplace_back(std::string(s)); }
void sfz_push_scalar_type(void* c, int32_t st) {
  static_cast<Call*>(c)->stack.emplace_back(static_cast<c10::ScalarType>(st));
}
void sfz_push_int_list(void* c, const int64_t* v, int64_t n) {
  static_cast<Call*>(c)->stack.emplace_back(std::vector<int64_t>(v, v + n));
}
void sfz_push_double_list(void* c, const double* v, int64_t n) {
  static_cast<Call*>(c)->stack.emplace_back(std::vector<double>(v, v + n));
}
void sfz_push_bool_list(void* c, const bool* v, int64_t n) {
  c10::List<bool> list;
  for (int64_t k = 0; k < n; ++k) list.push_back(v[k]);
  static_cast<Call*>(c)->stack.emplace_back(std::move(list));
}
void sfz_push_tensor_list(void* c, const at::Tensor* const* ts, int64_t n) {
  std::vector<at::Tensor> list;
  list.reserve(n);
  for (int64_t k = 0; k < n; ++k) list.push_back(*ts[k]);
  static_cast<Call*>(c)->stack.emplace_back(std::move(list));
}
// A Tensor?[] list (e.g. aten::index); null entries are None.
void sfz_push_opt_tensor_list(void* c, const at::Tensor* const* ts, int64_t n) {
  c10::List<std::optional<at::Tensor>> list;
  for (int64_t k = 0; k < n; ++k) {
    if (ts[k] == nullptr) {
      list.push_back(std::nullopt);
    } else {
      list.push_back(*ts[k]);
    }
  }
  static_cast<Call*>(c)->stack.emplace_back(std::move(list));
}
// The schema's default for argument `pos`; returns 0 when it has none.
int32_t sfz_push_default(void* c, void* op, int64_t pos) {
  const auto& args = static_cast<c10::OperatorHandle*>(op)->schema().arguments();
  if (pos < 0 || static_cast<size_t>(pos) >= args.size()) return 0;
  const auto& arg = args[pos];
  if (!arg.default_value()) {
    // A `Device` without a default (`_resize_output`): sfz's tensors live on the CPU.
    if (arg.type()->kind() != c10::TypeKind::DeviceObjType) return 0;
    static_cast<Call*>(c)->stack.emplace_back(c10::Device(c10::kCPU));
    return 1;
  }
  static_cast<Call*>(c)->stack.push_back(*arg.default_value());
  return 1;
}

// Checks the stack against the schema, then calls. Returns an ErrorClass; outputs or the error
// message are read back with the accessors below.
int32_t sfz_call_run(void* c, void* op) {
  auto* call = static_cast<Call*>(c);
  auto* handle = static_cast<c10::OperatorHandle*>(op);
  int32_t checked = guarded(call, [&] { handle->schema().checkAndNormalizeInputs(call->stack); });
  if (checked != kOk) return kSchemaMismatch;
  int32_t status = guarded(call, [&] { handle->callBoxed(call->stack); });
  if (status != kOk) return status;
  status = guarded(call, [&] {
    for (const auto& v : call->stack) flatten(v, call, 0);
  });
  return status;
}

const char* sfz_call_error(void* c) { return static_cast<Call*>(c)->error.c_str(); }
int64_t sfz_call_num_outputs(void* c) { return static_cast<int64_t>(static_cast<Call*>(c)->outputs.size()); }

// Output k: its kind (0 tensor, 1 int, 2 double, 3 bool, 4 none, 5 other) and scalar value.
int32_t sfz_call_output(void* c, int64_t k, int64_t* i, double* d) {
  const auto& o = static_cast<Call*>(c)->outputs.at(k);
  *i = o.kind == 0 ? o.tensor_index : o.i;
  *d = o.d;
  return o.kind;
}

// Facts about output tensor `index`: dtype, shape (the first `cap` dims written to `shape`,
// `info->ndim` says how many there are) and value statistics. Returns an ErrorClass.
int32_t sfz_call_tensor_info(void* c, int64_t index, TensorInfo* info, int64_t* shape, int64_t cap) {
  auto* call = static_cast<Call*>(c);
  *info = TensorInfo{0, -1, 0, 0, 0, 0, 0, 0.0, 0.0};
  return guarded(call, [&] {
    const at::Tensor& t = call->out_tensors.at(index);
    if (!t.defined()) return;
    info->defined = 1;
    info->scalar_type = static_cast<int32_t>(t.scalar_type());
    auto sizes = t.sizes();
    info->ndim = static_cast<int64_t>(sizes.size());
    for (int64_t d = 0; d < info->ndim && d < cap; ++d) shape[d] = sizes[d];
    tensor_stats(t, info);
  });
}

// A new owned handle to output tensor `index` (tch frees it).
at::Tensor* sfz_call_tensor(void* c, int64_t index) {
  return new at::Tensor(static_cast<Call*>(c)->out_tensors.at(index));
}

}  // extern "C"
