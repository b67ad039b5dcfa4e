// word2vec's negative-sampling SGD step, fused: the step of word2bert.word2vec.Word2VecModel.sgd_step in one pass.
//
// sgd_step gathers the rows a batch uses into [B, 1 + K, D] tensors, multiplies, sums and scatters them back with
// some twenty operators; here each example's rows are read once, in place. The arithmetic is the same: every
// score and step is computed from the tables as they were before the batch, then every step is added, so the
// vectors agree with sgd_step's to float rounding (tests/test_word2vec.py checks it).
// the few headers the kernel uses, not ATen/ATen.h: half the compile time
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace {

template <typename T>
inline T dot(const T* a, const T* b, int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

template <typename T>
inline void axpy(T alpha, const T* x, T* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// Rows are scattered over tables larger than the caches: ask for example b + kAhead's rows while example b is
// computed, so that the memory's latency overlaps the arithmetic.
constexpr int64_t kAhead = 4;

template <typename T>
inline void prefetch_row(const T* p, int64_t n, bool write) {
  for (int64_t i = 0; i < n; i += 64 / sizeof(T)) {
    if (write)
      __builtin_prefetch(p + i, 1);
    else
      __builtin_prefetch(p + i, 0);
  }
}

// One batch: examples [0, B), whose input rows are row[b] (skip-gram) or row[off[b]:off[b + 1]] (CBOW) and whose
// output rows are out[b * J: (b + 1) * J], the target first. Returns the batch's summed loss.
template <typename T>
double step(T* w0, T* w1, const int64_t D, const int64_t* row, const int64_t* off, const int64_t* out,
            const int64_t B, const int64_t J, const double lr) {
  // buffers kept between batches and calls: a fresh [B, D] vector is a fresh mmap, whose first touches fault
  static thread_local std::vector<T> hidden_, back_, error_;
  static thread_local std::vector<double> loss_;
  hidden_.resize(B * D);
  back_.assign(B * D, T(0));
  error_.resize(B * J);
  loss_.resize(B);
  T *hidden = hidden_.data(), *back = back_.data(), *error = error_.data();
  double* loss = loss_.data();

  // reads only: h (the center's vector, or the mean of the context's), the scores, the errors and the input
  // side's steps sum_j error_j v'_j
  at::parallel_for(0, B, 32, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      if (b + kAhead < b1) {
        const int64_t a = b + kAhead;
        for (int64_t r = off ? off[a] : a; r < (off ? off[a + 1] : a + 1); ++r) prefetch_row(w0 + row[r] * D, D, false);
        for (int64_t j = 0; j < J; ++j) prefetch_row(w1 + out[a * J + j] * D, D, false);
      }
      T* h = &hidden[b * D];
      const int64_t r0 = off ? off[b] : b, r1 = off ? off[b + 1] : b + 1;
      std::copy_n(w0 + row[r0] * D, D, h);
      for (int64_t r = r0 + 1; r < r1; ++r) axpy(T(1), w0 + row[r] * D, h, D);
      if (r1 - r0 > 1) {
        const T inv = T(1) / T(r1 - r0);
        for (int64_t i = 0; i < D; ++i) h[i] *= inv;
      }
      const int64_t* o = out + b * J;
      double terms = 1;  // the product of 1 + exp(-|x|): one log per example instead of one log1p per word
      double l = 0;
      for (int64_t j = 0; j < J; ++j) {
        const bool target = j == 0;
        if (!target && o[j] == o[0]) {  // a noise word equal to the target is skipped, as in the C code
          error[b * J + j] = 0;
          continue;
        }
        // x = s for the target (label 1) and -s for noise (label 0); the loss is -log sigma(x) =
        // log(1 + exp(-|x|)) - min(x, 0) and the error label - sigma(s) is sigma(-x) for the target, -sigma(-x) for
        // noise: one exp for both
        const T s = dot(h, w1 + o[j] * D, D), x = target ? s : -s, z = std::exp(-std::abs(x));
        terms *= 1.0 + z;
        l -= std::min(x, T(0));
        const T e = T(lr) * (target ? T(1) : T(-1)) * (x >= 0 ? z : T(1)) / (T(1) + z);
        error[b * J + j] = e;
        axpy(e, w1 + o[j] * D, &back[b * D], D);
      }
      loss[b] = l + std::log(terms);
    }
  });
  // writes: every output row moves by error_j h, every input row by its example's step (each context word of a
  // CBOW example by the whole step). Threads split the columns, so rows a batch touches twice get their steps in
  // the same order on any number of threads.
  at::parallel_for(0, D, 16, [&](int64_t c0, int64_t c1) {
    for (int64_t b = 0; b < B; ++b) {
      if (b + kAhead < B)
        for (int64_t j = 0; j < J; ++j) prefetch_row(w1 + out[(b + kAhead) * J + j] * D + c0, c1 - c0, true);
      const int64_t* o = out + b * J;
      for (int64_t j = 0; j < J; ++j) {
        const T e = error[b * J + j];
        if (e != T(0)) axpy(e, &hidden[b * D + c0], w1 + o[j] * D + c0, c1 - c0);
      }
    }
    for (int64_t b = 0; b < B; ++b) {
      if (b + kAhead < B) {
        const int64_t a = b + kAhead;
        for (int64_t r = off ? off[a] : a; r < (off ? off[a + 1] : a + 1); ++r)
          prefetch_row(w0 + row[r] * D + c0, c1 - c0, true);
      }
      const int64_t r0 = off ? off[b] : b, r1 = off ? off[b + 1] : b + 1;
      for (int64_t r = r0; r < r1; ++r) axpy(T(1), &back[b * D + c0], w0 + row[r] * D + c0, c1 - c0);
    }
  });
  double total = 0;
  for (int64_t b = 0; b < B; ++b) total += loss[b];
  return total;
}

// Every batch of a chunk in turn, batch i with learning rate lrs[i]: what the training loop would do with one call
// per batch, without coming back to Python (and its GIL) in between.
double sgd_steps(at::Tensor syn0, at::Tensor syn1, const at::Tensor& rows, const std::optional<at::Tensor>& offsets,
                 const at::Tensor& outputs, const at::Tensor& lrs, int64_t batch_size) {
  TORCH_CHECK(syn0.device().is_cpu() && syn0.is_contiguous() && syn1.is_contiguous(), "CPU, contiguous tables");
  TORCH_CHECK(syn0.scalar_type() == syn1.scalar_type() && syn0.sizes() == syn1.sizes() && syn0.dim() == 2,
              "two tables of one shape [V, D]");
  TORCH_CHECK(rows.scalar_type() == at::kLong && outputs.scalar_type() == at::kLong && outputs.dim() == 2,
              "int64 word ids, outputs [N, 1 + K]");
  const int64_t N = outputs.size(0), J = outputs.size(1), V = syn0.size(0), D = syn0.size(1);
  TORCH_CHECK(batch_size > 0 && lrs.numel() == (N + batch_size - 1) / batch_size, "one learning rate per batch");
  TORCH_CHECK(offsets ? offsets->numel() == N + 1 : rows.numel() == N, "one input row (or bag) per example");
  const auto rows_c = rows.contiguous(), outputs_c = outputs.contiguous();
  const auto lrs_c = lrs.to(at::kDouble).contiguous();
  const auto offsets_c = offsets ? offsets->contiguous() : at::Tensor();
  // the kernel writes where the ids point: an id outside the tables, or a bag outside rows, is an error
  for (const auto* ids : {&rows_c, &outputs_c}) {
    const int64_t* p = ids->data_ptr<int64_t>();
    TORCH_CHECK(std::all_of(p, p + ids->numel(), [V](int64_t id) { return id >= 0 && id < V; }),
                "word ids outside the tables");
  }
  if (offsets) {
    TORCH_CHECK(offsets_c.scalar_type() == at::kLong, "int64 offsets");
    const int64_t* p = offsets_c.data_ptr<int64_t>();
    TORCH_CHECK(p[0] == 0 && p[N] == rows.numel() && std::is_sorted(p, p + N + 1), "offsets rise from 0 to len(rows)");
  }
  return AT_DISPATCH_FLOATING_TYPES(syn0.scalar_type(), "word2vec_sgd_steps", [&] {
    const int64_t* row = rows_c.data_ptr<int64_t>();
    const int64_t* out = outputs_c.data_ptr<int64_t>();
    const int64_t* off = offsets ? offsets_c.data_ptr<int64_t>() : nullptr;
    const double* lr = lrs_c.data_ptr<double>();
    double total = 0;
    for (int64_t b0 = 0, i = 0; b0 < N; b0 += batch_size, ++i) {
      const int64_t B = std::min(batch_size, N - b0);
      total += step<scalar_t>(syn0.data_ptr<scalar_t>(), syn1.data_ptr<scalar_t>(), D, off ? row : row + b0,
                              off ? off + b0 : nullptr, out + b0 * J, B, J, lr[i]);
    }
    return total;
  });
}

}  // namespace

TORCH_LIBRARY(word2bert, m) {
  m.def("word2vec_sgd_steps(Tensor(a!) syn0, Tensor(b!) syn1, Tensor rows, Tensor? offsets, Tensor outputs, "
        "Tensor lrs, int batch_size) -> float");
  m.impl("word2vec_sgd_steps", c10::DispatchKey::CPU, TORCH_FN(sgd_steps));
}
