"""Distributed configuration (article 1, section 7.2): data parallel across Open MPI ranks.

    scripts/mpirun-local -np 2 python3 samples/python/distributed.py   (also runs alone: one rank)

Slips fixed:
- the article never starts the communicator: `init()` from `modescope.communication` comes first;
- `device_num=8` needs eight ranks: the sample asks for the job's own size (`get_group_size()`);
- `in_strategy=(1, 8)` would split dim 1 of `x` across eight devices, which for `net(x)` is
  operator-level model parallelism; Modescope shards the batch dim (data parallel), so the sample
  splits dim 0: `in_strategy=((N, 1),)`, with the outputs gathered (`out_strategy=((N, 1),)`);
- `net` is not defined in the article: a small Dense network stands in for it, and a few
  data-parallel training steps follow.
"""
import json

import numpy as np
import modescope as ms
from modescope import nn
from modescope.communication import init, get_rank, get_group_size

init()
N = get_group_size()
ms.set_auto_parallel_context(
    parallel_mode=ms.ParallelMode.DATA_PARALLEL,
    device_num=N  # the article: device_num=8
)

ms.set_seed(1)
net = nn.SequentialCell(nn.Dense(16, 32), nn.ReLU(), nn.Dense(32, 4))

@ms.shard(in_strategy=((N, 1),), out_strategy=((N, 1),))  # the article: in_strategy=(1, 8)
def forward_fn(x):
    return net(x)

# A fixed global batch of 8; each rank holds all of it and works on its slice.
x = ms.Tensor((np.arange(8 * 16, dtype=np.float32).reshape(8, 16) % 7) / 7 - 0.5)
target = ms.Tensor((np.arange(8 * 4, dtype=np.float32).reshape(8, 4) % 5) / 5)
sharded = forward_fn(x).asnumpy()   # every rank gets all 8 rows
whole = net(x).asnumpy()

train_net = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), learning_rate=0.1))
rank, rows = get_rank(), 8 // N
losses = []
for step in range(3):
    mine = slice(rank * rows, (rank + 1) * rows)
    losses.append(float(train_net(x[mine], target[mine]).asnumpy()))
weights = [p.asnumpy() for p in net.trainable_params()]
print("@@RANK@@" + json.dumps({"rank": rank, "ranks": N, "shard_max_diff": float(np.abs(sharded - whole).max()),
                               "losses": losses, "weights": [float(w.sum()) for w in weights],
                               "first": [float(w.ravel()[0]) for w in weights]}))
