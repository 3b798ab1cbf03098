"""nn.WithLossCell and nn.TrainOneStepCell: a training step the engine runs whole (forward, loss,
backward, update); in GRAPH_MODE the step is one compiled graph, traced at the first call."""
import weakref

from .. import _C
from .cell import Cell

# Training cells alive, so communication's exit handler can let go of their engine steps (and the
# communicator they hold) before MPI is finalized.
live_train_cells = weakref.WeakSet()


class WithLossCell(Cell):
    def __init__(self, backbone, loss_fn):
        super().__init__()
        self._backbone = backbone
        self._loss_fn = loss_fn

    def construct(self, data, label):
        return self._loss_fn(self._backbone(data), label)

    @property
    def backbone_network(self):
        return self._backbone


class TrainOneStepCell(Cell):
    """TrainOneStepCell(network, optimizer): network(*inputs) returns the loss; a call runs one step
    in the context's mode and returns the loss. A mode change between calls keeps the optimizer's
    state (moments, step count) and the loss scale: the steps continue where the other mode left
    them, and Graph mode's compiled step is kept for the next time."""

    def __init__(self, network, optimizer, sens=None, amp_level=0, loss_scale="none", init_scale=65536.0,
                 scale_factor=2.0, scale_window=1000, jit_level=1):
        super().__init__()
        self.network = network
        self.optimizer = optimizer
        self._step_args = dict(amp_level=amp_level, loss_scale=loss_scale, init_scale=init_scale, factor=scale_factor,
                               window=scale_window, jit_level=jit_level)
        self._step = None
        live_train_cells.add(self)

    def __call__(self, *inputs):
        mode_graph = _C._get_context()["mode"] == 0
        if self._step is None:
            self._step = _C.TrainStep(self.network, self.optimizer, **self._step_args)
        if self._step.graph_mode != mode_graph:
            self._step.graph_mode = mode_graph
        # The rates of this step (one per parameter group) are inputs of the step: a compiled step
        # runs with new ones, never re-traced.
        self._step.learning_rates = self.optimizer._lrs()
        loss = self._step(*inputs)
        if not self._step.last_overflow:
            self.optimizer.global_step += 1
        return loss

    def construct(self, *inputs):
        return self(*inputs)

    @property
    def compile_count(self):
        """Graph mode: the training-step graphs traced and compiled (one per batch signature; new
        learning rates never add one)."""
        return self._step.compile_count if self._step else 0

    @property
    def loss_scale(self):
        return self._step.loss_scale if self._step else self._step_args["init_scale"]

    @property
    def skipped_steps(self):
        return self._step.skipped_steps if self._step else 0
