// Copies between remote buffers (the buffer iface's copy_tensor): rank 0
// moves no bytes. Between two ranks it posts a send item for the source
// rank and a receive item for the destination rank (transport.h: they go
// as one copies request per rank before rank 0 next waits for a reply, so
// neither worker waits on a message rank 0 has not sent); the workers move
// the bytes with MPI point-to-point on the copy's own tag. On one rank it
// posts a local item. The replies are owed: an error comes back from the
// next request to that rank or the stream's next flush, as for the queued
// copies of an async device. Called with the host's usual ordering: the
// source complete, the destination's memory idle.
#pragma once

#include "buffer.h"
#include "loom/plugin.h"

namespace loom::mpi {

// dst lies in dst_rb. UNIMPLEMENTED (the host stages the copy) when src is
// not in a remote buffer or the two are not dense tensors of one layout.
loom_status_t* remote_copy(RemoteBuffer* dst_rb, const loom_tensor_t* src, loom_tensor_t* dst);

}  // namespace loom::mpi
