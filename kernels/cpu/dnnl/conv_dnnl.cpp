#include "kernels/cpu/dnnl/conv_dnnl.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "base/address_space.h"
#include "kernels/cpu/thread_pool.h"

namespace lockstep::cpu {

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Args = std::unordered_map<int, memory>;

// Buffers in oneDNN's layouts, shared by every geometry of the calling thread:
// a call needs at most three at once (two operands in, one out), and keeping
// them per geometry would hold several activations' worth per layer shape.
class Scratch {
public:
  static constexpr int kSlots = 3;
  ~Scratch() {
    for (void* p : ptr_) std::free(p);
  }
  void* slot(int i, size_t bytes) {
    if (bytes > bytes_[i]) {
      std::free(ptr_[i]);
      ptr_[i] = nullptr;
      bytes = (bytes + 63) / 64 * 64;  // aligned_alloc wants a multiple of the alignment
      // Activation-sized: kept out of the margin oneDNN's own objects need (base/address_space.h).
      if (address_space_allows(bytes)) ptr_[i] = std::aligned_alloc(64, bytes);
      if (!ptr_[i]) {
        bytes_[i] = 0;
        throw std::bad_alloc();
      }
      bytes_[i] = bytes;
    }
    return ptr_[i];
  }

private:
  void* ptr_[kSlots] = {};
  size_t bytes_[kSlots] = {};
};

thread_local Scratch scratch;

// One operand as lockstep holds it (NCHW / OIHW, the caller's pointer) and as
// a primitive wants it. When the two layouts differ (or the result is added
// onto the caller's), `held` is in the primitive's layout, in scratch slot
// `slot` during the call, and `in`/`out`/`add` are the reorders between the
// two, built once.
struct Operand {
  memory user;                       // the caller's memory; its handle is set per call
  memory held;                       // the primitive's layout, or user itself
  bool separate = false;             // held is not user
  int slot = 0;
  std::optional<dnnl::reorder> in;   // user -> held
  std::optional<dnnl::reorder> out;  // held -> user
  std::optional<dnnl::reorder> add;  // held -> user, adding onto it

  Operand(const dnnl::engine& eng, const memory::desc& plain, const memory::desc& wanted, int scratch_slot,
          bool reads, bool writes, bool accumulates)
      : user(plain, eng, DNNL_MEMORY_NONE), slot(scratch_slot) {
    separate = wanted != plain || accumulates;
    held = separate ? memory(wanted, eng, DNNL_MEMORY_NONE) : user;
    if (wanted != plain && reads) in.emplace(user, held);
    if (wanted != plain && writes) out.emplace(held, user);
    if (accumulates) {
      dnnl::post_ops sum;
      sum.append_sum(1.0f);
      dnnl::primitive_attr attr;
      attr.set_post_ops(sum);
      add.emplace(dnnl::reorder::primitive_desc(held, user, attr));
    }
  }

  // The operand's memory for the primitive, `data` reordered into it if needed.
  const memory& read(dnnl::stream& s, const float* data) {
    bind(const_cast<float*>(data));
    if (in) in->execute(s, user, held);
    return held;
  }
  // The memory the primitive writes; finish() brings it to `data`.
  const memory& target(float* data) {
    bind(data);
    return held;
  }
  void finish(dnnl::stream& s, bool accumulate) {
    if (accumulate)
      add->execute(s, held, user);
    else if (out)
      out->execute(s, held, user);
  }

private:
  void bind(float* data) {
    user.set_data_handle(data);
    if (separate) held.set_data_handle(scratch.slot(slot, held.get_desc().get_size()));
  }
};

struct Engine {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};

// Everything one geometry needs, built on first use of each direction.
struct Entry {
  memory::desc x, w, y, bias;  // lockstep's layouts
  bool nhwc = false;           // the images' layout is oneDNN's too
  memory::dims strides, padding;
  std::optional<dnnl::convolution_forward::primitive_desc> forward_pd;
  std::optional<dnnl::convolution_forward> forward;
  std::optional<Operand> fx, fw, fy;
  std::optional<memory> fbias;  // its handle set per call: no oneDNN object made in a step after the first
  std::optional<dnnl::convolution_backward_data> backward_data;
  std::optional<Operand> dy_data, w_data, dx_write, dx_add;
  std::optional<dnnl::convolution_backward_weights> backward_weights;
  std::optional<Operand> x_weights, dy_weights, dw;

  // How a primitive is told of an image operand held as `held`.
  memory::desc image(const memory::desc& held) const {
    return nhwc ? held : memory::desc(held.dims(), memory::data_type::f32, memory::format_tag::any);
  }
};

using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, MemoryFormat>;

// More distinct geometries than a network and its last partial batch and
// evaluation batch use: beyond it the thread's cache starts afresh.
constexpr size_t kMaxGeometries = 64;

thread_local std::unique_ptr<Engine> thread_engine;
thread_local std::map<Key, std::unique_ptr<Entry>> thread_cache;

Engine& engine() {
  if (!thread_engine) thread_engine = std::make_unique<Engine>();
  return *thread_engine;
}

memory::desc plain(memory::dims dims, Tag tag) { return memory::desc(dims, memory::data_type::f32, tag); }
memory::desc any(memory::dims dims) { return memory::desc(dims, memory::data_type::f32, Tag::any); }

Entry& entry_for(const ConvGeometry& g, bool bias, MemoryFormat format) {
  const Key key{g.batch, g.in_channels, g.in_h, g.in_w, g.out_channels, g.kernel, g.stride, g.padding, bias, format};
  auto it = thread_cache.find(key);
  if (it != thread_cache.end()) return *it->second;
  if (thread_cache.size() >= kMaxGeometries) thread_cache.clear();
  auto e = std::make_unique<Entry>();
  const memory::dims x{g.batch, g.in_channels, g.in_h, g.in_w}, w{g.out_channels, g.in_channels, g.kernel, g.kernel},
      y{g.batch, g.out_channels, g.out_h, g.out_w};
  const bool nhwc = format == MemoryFormat::nhwc;
  e->x = plain(x, nhwc ? Tag::nhwc : Tag::nchw);
  e->w = plain(w, Tag::oihw);
  e->y = plain(y, nhwc ? Tag::nhwc : Tag::nchw);
  e->nhwc = nhwc;
  e->bias = plain({g.out_channels}, Tag::x);
  e->strides = {g.stride, g.stride};
  e->padding = {g.padding, g.padding};
  // Every direction is described with the forward's hint, so all three agree
  // on the blocked layouts; "any" lets oneDNN pick them for this machine.
  // NHWC images are held to NHWC (oneDNN's channels-last kernels), so only
  // the filter is reordered.
  using dnnl::algorithm;
  using dnnl::prop_kind;
  auto desc = bias ? dnnl::convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct,
                                                     e->image(e->x), any(w), e->bias, e->image(e->y), e->strides,
                                                     e->padding, e->padding)
                   : dnnl::convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct,
                                                     e->image(e->x), any(w), e->image(e->y), e->strides, e->padding,
                                                     e->padding);
  e->forward_pd.emplace(desc, engine().engine);
  return *thread_cache.emplace(key, std::move(e)).first->second;
}

// oneDNN's OpenMP threads for the calling thread's next primitives.
void use_pool_threads() { omp_set_num_threads(compute_threads()); }

template <class F>
void guarded(const char* what, const ConvGeometry& g, F f) {
  // oneDNN 2.6 writes through a null pointer when one of its own small
  // allocations fails: under ulimit -v it is entered only while half the
  // margin the engine's buffers leave is there, and a std::bad_alloc (the
  // replica's "out of host memory") is thrown instead (base/address_space.h).
  if (!address_space_allows(0, 1)) throw std::bad_alloc();
  try {
    use_pool_threads();
    f(engine().stream);
    engine().stream.wait();
  } catch (const dnnl::error& e) {
    throw std::runtime_error(std::string("oneDNN convolution ") + what + " of " + std::to_string(g.batch) + "x" +
                             std::to_string(g.in_channels) + "x" + std::to_string(g.in_h) + "x" +
                             std::to_string(g.in_w) + " to " + std::to_string(g.out_channels) + " channels: " +
                             e.what());
  }
}

}  // namespace

void dnnl_conv2d_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y,
                         MemoryFormat format) {
  if (g.batch == 0) return;
  guarded("forward", g, [&](dnnl::stream& s) {
    Entry& e = entry_for(g, bias != nullptr, format);
    const dnnl::engine& eng = engine().engine;
    if (!e.forward) {
      e.forward.emplace(*e.forward_pd);
      e.fx.emplace(eng, e.x, e.forward_pd->src_desc(), 0, true, false, false);
      e.fw.emplace(eng, e.w, e.forward_pd->weights_desc(), 1, true, false, false);
      e.fy.emplace(eng, e.y, e.forward_pd->dst_desc(), 2, false, true, false);
      if (bias) e.fbias.emplace(e.bias, eng, static_cast<void*>(DNNL_MEMORY_NONE));
    }
    Args args{{DNNL_ARG_SRC, e.fx->read(s, x)}, {DNNL_ARG_WEIGHTS, e.fw->read(s, w)},
              {DNNL_ARG_DST, e.fy->target(y)}};
    if (bias) {
      e.fbias->set_data_handle(const_cast<float*>(bias));
      args.emplace(DNNL_ARG_BIAS, *e.fbias);
    }
    e.forward->execute(s, args);
    e.fy->finish(s, false);
  });
}

void dnnl_conv2d_backward_data(const ConvGeometry& g, const float* dy, const float* w, float* dx, bool accumulate,
                               MemoryFormat format) {
  if (g.batch == 0) return;
  guarded("backward data", g, [&](dnnl::stream& s) {
    Entry& e = entry_for(g, false, format);
    const dnnl::engine& eng = engine().engine;
    if (!e.backward_data) {
      const auto desc = dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, e.image(e.x),
                                                              any(e.w.dims()), e.image(e.y), e.strides, e.padding,
                                                              e.padding);
      const dnnl::convolution_backward_data::primitive_desc pd(desc, eng, *e.forward_pd);
      e.backward_data.emplace(pd);
      e.dy_data.emplace(eng, e.y, pd.diff_dst_desc(), 0, true, false, false);
      e.w_data.emplace(eng, e.w, pd.weights_desc(), 1, true, false, false);
      e.dx_write.emplace(eng, e.x, pd.diff_src_desc(), 2, false, true, false);
      e.dx_add.emplace(eng, e.x, pd.diff_src_desc(), 2, false, false, true);
    }
    Operand& out = accumulate ? *e.dx_add : *e.dx_write;
    e.backward_data->execute(s, {{DNNL_ARG_DIFF_DST, e.dy_data->read(s, dy)},
                                 {DNNL_ARG_WEIGHTS, e.w_data->read(s, w)},
                                 {DNNL_ARG_DIFF_SRC, out.target(dx)}});
    out.finish(s, accumulate);
  });
}

void dnnl_conv2d_backward_filter(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                                 MemoryFormat format) {
  if (g.batch == 0) {
    std::fill(dw, dw + g.weight_numel(), 0.0f);
    return;
  }
  guarded("backward filter", g, [&](dnnl::stream& s) {
    Entry& e = entry_for(g, false, format);
    const dnnl::engine& eng = engine().engine;
    if (!e.backward_weights) {
      const auto desc = dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct,
                                                                 e.image(e.x), any(e.w.dims()), e.image(e.y),
                                                                 e.strides, e.padding, e.padding);
      const dnnl::convolution_backward_weights::primitive_desc pd(desc, eng, *e.forward_pd);
      e.backward_weights.emplace(pd);
      e.x_weights.emplace(eng, e.x, pd.src_desc(), 0, true, false, false);
      e.dy_weights.emplace(eng, e.y, pd.diff_dst_desc(), 1, true, false, false);
      e.dw.emplace(eng, e.w, pd.diff_weights_desc(), 2, false, true, false);
    }
    e.backward_weights->execute(s, {{DNNL_ARG_SRC, e.x_weights->read(s, x)},
                                    {DNNL_ARG_DIFF_DST, e.dy_weights->read(s, dy)},
                                    {DNNL_ARG_DIFF_WEIGHTS, e.dw->target(dw)}});
    e.dw->finish(s, false);
  });
}

int dnnl_cached_geometries() { return static_cast<int>(thread_cache.size()); }

}  // namespace lockstep::cpu
