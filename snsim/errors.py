"""One exception tree for snsim.

Every error a user can cause (bad config, bad graph, bad trace, unknown name) is a
subclass of :class:`SnsimError`; the CLI prints ``str(error)`` as one line and exits 2.
"""


class SnsimError(Exception):
    """Root of every snsim error."""


class ConfigError(SnsimError, ValueError):
    """A configuration value (YAML, CLI flag, option) breaks a rule."""


class UnknownNameError(ConfigError):
    """A network, policy, allocator, hardware preset or layer type that does not exist."""


class GraphError(SnsimError, ValueError):
    """A layer graph that is cyclic, disconnected or otherwise malformed."""


class TraceError(SnsimError, ValueError):
    """A trace file that is truncated, malformed or of an unsupported version."""


class PlanError(SnsimError, ValueError):
    """A schedule plan that references missing tensors or breaks the IR's rules."""


class InvariantError(SnsimError, AssertionError):
    """The engine broke one of its own rules (raised only with ``check_invariants=True``).

    The message names the event: the step, tensor or copy and the simulated time.
    """


class InfeasibleError(SnsimError):
    """An allocation that does not fit, even after the policy's eviction hook.

    The engine catches it and turns it into an infeasible ``Result``; it is raised to the
    caller only by code that asks for it explicitly.
    """

    def __init__(self, message, *, step=None, layer=None, tensor=None, time_s=None,
                 requested_bytes=0, short_bytes=0):
        super().__init__(message)
        self.step = step
        self.layer = layer
        self.tensor = tensor
        self.time_s = time_s
        self.requested_bytes = requested_bytes
        self.short_bytes = short_bytes
