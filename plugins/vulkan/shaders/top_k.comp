#version 450
// TOP_K (ABI 1.5): dst[j, r] = the index of row r's j-th largest element
// (j < k = dst ne[0]), largest first; equal values: the lower index first;
// NaN below every number (-inf above NaN), NaNs by index. One invocation
// per source element (i, r), m fastest: its rank is the number of elements
// of the row that come before it in that total order, and it writes its
// index at dst[rank] when rank < k. No shared memory or barriers; n steps
// per invocation (the host refuses rows past lavapipe's loop budget).
#include "common.glsl"

// Whether value x at index i comes before value y at index j.
bool before(float x, uint i, float y, uint j) {
  bool xn = isnan(x), yn = isnan(y);
  if (xn != yn) return yn;
  if (!xn && x != y) return x > y;
  return i < j;
}

void main() {
  uint n = pc.t[1].ne[0];
  uint idx = flat_index();
  if (idx >= nelems(1)) return;
  uint i = idx % n;
  uint r = idx / n;
  uint i1 = r % pc.t[1].ne[1];
  uint i2 = (r / pc.t[1].ne[1]) % pc.t[1].ne[2];
  uint i3 = r / (pc.t[1].ne[1] * pc.t[1].ne[2]);
  uint row = offset4(1, 0u, i1, i2, i3);
  uint nb0 = pc.t[1].nb[0];
  float x = uintBitsToFloat(ld_a_u32(row + i * nb0));
  uint rank = 0u;
  for (uint j = 0u; j < n; ++j) {
    if (before(uintBitsToFloat(ld_a_u32(row + j * nb0)), j, x, i)) ++rank;
  }
  if (rank < pc.t[0].ne[0]) st_u32(offset4(0, rank, i1, i2, i3), i);
}
