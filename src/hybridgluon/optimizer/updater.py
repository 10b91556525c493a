"""The Updater (MXNet's `mx.optimizer.Updater`): applies an optimizer to weights by index and
keeps each weight's state, created on first use; its states (and optionally the optimizer with
its schedule and update counts) pickle for Trainer.save_states / load_states."""
import pickle

from ..ndarray import NDArray

__all__ = ['Updater', 'get_updater']


class Updater(object):
    """Applies an optimizer to weights by index, creating each weight's state on first use."""
    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index, grad, weight):
        """Updates weight(s) given gradient(s) and index(es)."""
        if not isinstance(index, (list, tuple)):
            indices, grads, weights = [index], [grad], [weight]
        else:
            indices, grads, weights = list(index), list(grad), list(weight)
        if weights:  # update counts are kept per device id, as in MXNet
            self.optimizer._set_current_context(weights[0].context.device_id)
        for i, idx in enumerate(indices):
            if isinstance(idx, bytes):
                indices[i] = idx = idx.decode()
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, weights[i])
                self.states_synced[idx] = True
            elif not self.states_synced[idx]:
                self.states[idx] = self.sync_state_context(self.states[idx], weights[i].context)
                self.states_synced[idx] = True
        for i, w, g in zip(indices, weights, grads):
            self.optimizer.update_multi_precision(i, w, g, self.states[i])

    def sync_state_context(self, state, context):
        """Moves a state (or nested tuple/list of states) to `context`."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced_state = (self.sync_state_context(i, context) for i in state)
            if isinstance(state, tuple):
                return tuple(synced_state)
            return list(synced_state)
        return state

    def set_states(self, states):
        """Sets updater states from `get_states`' bytes (and the optimizer, if dumped)."""
        states = pickle.loads(states)
        if isinstance(states, tuple) and len(states) == 2:
            self.states, self.optimizer = states
        else:
            self.states = states
        self.states_synced = dict.fromkeys(self.states.keys(), False)

    def get_states(self, dump_optimizer=False):
        """Pickled states (and the optimizer with its schedule when dump_optimizer)."""
        return pickle.dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer):
    """The Updater closure of `optimizer` (what a kvstore or Trainer calls)."""
    return Updater(optimizer)
