#include "layers/memory_plan.h"

#include <algorithm>
#include <climits>
#include <numeric>

#include "base/error.h"

namespace lockstep {

namespace {

int64_t aligned(int64_t bytes) { return (bytes + kPlanAlignBytes - 1) / kPlanAlignBytes * kPlanAlignBytes; }

int find_root(std::vector<int>& parent, int v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

// The input of node n whose written gradient may be n's output gradient, or -1:
// n is the latest consumer of that input (so its backward writes, never adds)
// and reads it once.
int aliased_grad_input(const std::vector<PlanNode>& nodes, const std::vector<int>& last_consumer, size_t n) {
  const PlanNode& node = nodes[n];
  if (!node.input_grad_may_alias_output_grad) return -1;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const int src = node.inputs[i];
    if (src < 0 || last_consumer[src] != static_cast<int>(n)) continue;
    if (std::count(node.inputs.begin(), node.inputs.end(), src) == 1) return static_cast<int>(i);
  }
  return -1;
}

struct Placed {
  int64_t offset, size;
  int first, last;
};

}  // namespace

MemoryPlan plan_memory(const std::vector<PlanNode>& nodes, int64_t capacity, PlanKind kind, bool share) {
  LS_CHECK(capacity >= 1, "memory plan for a capacity of ", capacity, " samples; it needs at least 1");
  LS_CHECK(!nodes.empty(), "memory plan of a graph with no node");
  const int n_nodes = static_cast<int>(nodes.size());
  const bool train = kind == PlanKind::train;
  std::vector<int> last_consumer(nodes.size(), -1);
  for (int n = 0; n < n_nodes; ++n) {
    const PlanNode& node = nodes[n];
    LS_CHECK(node.bytes_per_sample >= 1, "memory plan: node ", n, " has an empty output");
    LS_CHECK(node.backward_reads_input.size() == node.inputs.size(), "memory plan: node ", n, " has ",
             node.inputs.size(), " inputs but says what backward reads of ", node.backward_reads_input.size());
    for (int src : node.inputs) {
      LS_CHECK(src >= -1 && src < n, "memory plan: node ", n, " reads node ", src, ", not an earlier one");
      if (src >= 0) last_consumer[src] = n;
    }
  }

  // Values: node n's output is n, its gradient n_nodes + n. Lifetimes [first, last].
  const int n_values = train ? 2 * n_nodes : n_nodes;
  std::vector<int64_t> size(n_values);
  std::vector<int> first(n_values, INT_MAX), last(n_values, -1);
  const auto use = [&](int v, int t) {
    first[v] = std::min(first[v], t);
    last[v] = std::max(last[v], t);
  };
  const auto backward_time = [&](int n) { return 2 * n_nodes - n; };
  for (int n = 0; n < n_nodes; ++n) {
    size[n] = aligned(capacity * nodes[n].bytes_per_sample);
    use(n, n);
    for (int src : nodes[n].inputs)
      if (src >= 0) use(src, n);
  }
  use(n_nodes - 1, n_nodes);  // the loss (or evaluation) reads the logits
  if (train) {
    use(2 * n_nodes - 1, n_nodes);  // the loss writes the logits' gradient
    for (int n = 0; n < n_nodes; ++n) {
      const PlanNode& node = nodes[n];
      const int t = backward_time(n);
      size[n_nodes + n] = size[n];
      use(n_nodes + n, t);
      if (node.backward_reads_output) use(n, t);
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const int src = node.inputs[i];
        if (src < 0) continue;
        use(n_nodes + src, t);
        if (node.backward_reads_input[i]) use(src, t);
      }
    }
  }

  MemoryPlan plan;
  plan.capacity = capacity;
  std::vector<int64_t> offset(n_values, 0);
  if (!share) {
    // One buffer per value, outputs first: eval's layout is training's outputs.
    for (int v = 0; v < n_values; ++v) {
      offset[v] = plan.total_bytes;
      plan.total_bytes += size[v];
    }
  } else {
    std::vector<int> parent(n_values);
    std::iota(parent.begin(), parent.end(), 0);
    const auto join = [&](int a, int b) { parent[find_root(parent, a)] = find_root(parent, b); };
    for (int n = 0; n < n_nodes; ++n) {
      const PlanNode& node = nodes[n];
      if (node.output_may_alias_input && node.inputs.size() == 1 && node.inputs[0] >= 0) join(n, node.inputs[0]);
      if (!train) continue;
      const int i = aliased_grad_input(nodes, last_consumer, n);
      if (i >= 0) join(n_nodes + node.inputs[i], n_nodes + n);
    }
    // A group of aliased values is one buffer living as long as all of them.
    std::vector<int64_t> group_size(n_values, 0);
    std::vector<int> group_first(n_values, INT_MAX), group_last(n_values, -1), roots;
    for (int v = 0; v < n_values; ++v) {
      const int r = find_root(parent, v);
      if (r == v) roots.push_back(r);
      group_size[r] = std::max(group_size[r], size[v]);
      group_first[r] = std::min(group_first[r], first[v]);
      group_last[r] = std::max(group_last[r], last[v]);
    }
    // Greedy by size: the largest buffers first, each at the lowest offset
    // clear of every placed buffer whose lifetime overlaps its own.
    std::stable_sort(roots.begin(), roots.end(), [&](int a, int b) {
      return group_size[a] != group_size[b] ? group_size[a] > group_size[b] : group_first[a] < group_first[b];
    });
    std::vector<Placed> placed;
    for (int r : roots) {
      std::vector<Placed> clash;
      for (const Placed& p : placed)
        if (p.first <= group_last[r] && group_first[r] <= p.last) clash.push_back(p);
      std::sort(clash.begin(), clash.end(), [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
      int64_t at = 0;
      for (const Placed& p : clash) {
        if (p.offset >= at + group_size[r]) break;
        at = std::max(at, p.offset + p.size);
      }
      placed.push_back({at, group_size[r], group_first[r], group_last[r]});
      offset[r] = at;
      plan.total_bytes = std::max(plan.total_bytes, at + group_size[r]);
    }
    for (int v = 0; v < n_values; ++v) offset[v] = offset[find_root(parent, v)];
  }
  plan.output_offset.assign(offset.begin(), offset.begin() + n_nodes);
  if (train) plan.grad_offset.assign(offset.begin() + n_nodes, offset.end());
  return plan;
}

}  // namespace lockstep
