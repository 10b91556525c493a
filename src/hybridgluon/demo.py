"""The main job: `python -m hybridgluon.demo`.

Trains the seed tutorial's LeNet (Conv2D, MaxPool2D, Dense and a hand-made `fc3_weight`) on
Fashion-MNIST, first imperatively and then hybridized (their throughput side by side), evaluates
it after every epoch, exports it (`*-symbol.json` + `*.params`), reloads the export with
`SymbolBlock.imports`, checks the reloaded model predicts the same, and prints a summary.

The data are Debian's dataset-fashion-mnist files (`apt-get install dataset-fashion-mnist`) or
the IDX files under --data-root; without them the demo says so and trains on a synthetic data
set of the same shape, so it still runs end to end.

With --plot it also writes a picture of the network (`mx.viz.plot_network`, drawn by Graphviz)
and a profile of the first hybridized epoch (`mx.profiler`, a Chrome trace that Perfetto and
chrome://tracing open) into --output.

Started by an MPI launcher (`mpirun -np 2 python -m hybridgluon.demo`, docs/distributed.md) it
trains data-parallel: every rank takes its part of each global batch of --batch-size, the
gradients are averaged over the ranks (hybridgluon.distributed), and each rank prints its
throughput; rank 0 evaluates, exports and prints the summary. The global batches, and so the
accuracy, are those of one process.
"""
import argparse
import os
import sys
import time

import numpy as np

import hybridgluon as mx
from hybridgluon import autograd, gluon, nd
from hybridgluon.gluon import nn

CLASSES = ['t-shirt', 'trouser', 'pullover', 'dress', 'coat', 'sandal', 'shirt', 'sneaker',
           'bag', 'ankle boot']


class Net(gluon.HybridBlock):
    """The seed tutorial's LeNet, unchanged but for the debugging print."""

    def __init__(self, **kwargs):
        super(Net, self).__init__(**kwargs)
        with self.name_scope():
            self.conv1 = nn.Conv2D(6, kernel_size=5)
            self.pool1 = nn.MaxPool2D(pool_size=2)
            self.conv2 = nn.Conv2D(16, kernel_size=5)
            self.pool2 = nn.MaxPool2D(pool_size=2)
            self.fc1 = nn.Dense(120)
            self.fc2 = nn.Dense(84)
            self.fc3_weight = self.params.get('fc3_weight', shape=(10, 84))

    def hybrid_forward(self, F, x, fc3_weight):
        x = self.pool1(F.relu(self.conv1(x)))
        x = self.pool2(F.relu(self.conv2(x)))
        x = x.reshape((0, -1))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.dot(x, fc3_weight, transpose_b=True)


class _Bar:
    """A progress bar: tqdm when installed, else a small one on stderr."""

    def __init__(self, total, desc):
        self.total, self.desc, self.n, self.t0 = total, desc, 0, time.perf_counter()
        self.postfix = ''
        try:
            from tqdm import tqdm
            self._tqdm = tqdm(total=total, desc=desc, unit='img', leave=True)
        except ImportError:
            self._tqdm = None

    def update(self, n, postfix=''):
        self.n += n
        if self._tqdm is not None:
            self._tqdm.update(n)
            if postfix:
                self._tqdm.set_postfix_str(postfix)
            return
        self.postfix = postfix or self.postfix
        if self.n < self.total and (self.n // n) % 20:
            return
        done = int(30 * self.n / max(self.total, 1))
        rate = self.n / max(time.perf_counter() - self.t0, 1e-9)
        sys.stderr.write('\r%s [%s%s] %d/%d %.0f img/s %s' % (
            self.desc, '#' * done, '.' * (30 - done), self.n, self.total, rate, self.postfix))
        sys.stderr.flush()

    def close(self):
        if self._tqdm is not None:
            self._tqdm.close()
        else:
            sys.stderr.write('\n')


def load_data(root):
    """(train images, train labels, test images, test labels, source description). Images are
    float32 NCHW in [0, 1]; the conversion runs as nd ops."""
    try:
        kw = {} if root is None else {'root': root}
        train = gluon.data.vision.FashionMNIST(train=True, **kw)
        test = gluon.data.vision.FashionMNIST(train=False, **kw)
        arrays = []
        for ds in (train, test):
            x, y = ds._data, ds._label
            # ToTensor + Normalize with Fashion-MNIST's mean and std, as nd ops
            arrays += [((x.astype('float32') / 255 - 0.2860) / 0.3530).transpose((0, 3, 1, 2)),
                       nd.array(y, dtype='float32')]
        return arrays + ['Fashion-MNIST (%d train, %d test images)' % (len(train), len(test))]
    except mx.MXNetError as e:
        print('NOTICE: Fashion-MNIST not found (%s).\nNOTICE: training on a synthetic data set '
              'of the same shape instead; install it with `apt-get install '
              'dataset-fashion-mnist` for real numbers.' % str(e).splitlines()[0])
        return _synthetic()


def _synthetic(n_train=12000, n_test=2000):
    """Ten classes of noisy, class-specific 28x28 patterns (learnable, not trivial)."""
    mx.random.seed(1)
    protos = nd.random.uniform(shape=(10, 1, 28, 28))
    out = []
    for n in (n_train, n_test):
        y = nd.random.randint(0, 10, shape=(n,)).astype('float32')
        x = nd.take(protos, y) * 0.6 + nd.random.uniform(shape=(n, 1, 28, 28)) * 0.4
        out += [x, y]
    return out + ['synthetic (%d train, %d test images)' % (n_train, n_test)]


def evaluate(net, x, y, batch_size=1000):
    correct = 0.0
    for i in range(0, x.shape[0], batch_size):
        pred = net(x[i:i + batch_size]).argmax(axis=1)
        correct += (pred == y[i:i + batch_size]).sum().asscalar()
    return correct / x.shape[0]


def _launched_by_mpi():
    """Whether an MPI launcher started this process as one of several."""
    for var in ('OMPI_COMM_WORLD_SIZE', 'PMI_SIZE', 'PMIX_SIZE', 'MPI_LOCALNRANKS'):
        if int(os.environ.get(var, '1') or 1) > 1:
            return True
    return False


class _Ranks:
    """This process's place in the job: rank r of n (0 of 1 when not started by MPI)."""

    def __init__(self):
        self.rank, self.size = 0, 1
        if _launched_by_mpi():
            from hybridgluon import distributed as dist
            dist.init()
            self.rank, self.size = dist.rank(), dist.size()

    def part(self, lo, hi):
        """This rank's part [a, b) of the global batch [lo, hi)."""
        n = hi - lo
        return lo + n * self.rank // self.size, lo + n * (self.rank + 1) // self.size


def train_epoch(net, trainer, loss_fn, x, y, batch_size, desc, limit=None, order=None,
                ranks=None):
    """One pass (or `limit` batches) of global batches of batch_size, of which this rank
    trains its part; returns (samples per second of this rank, mean loss)."""
    rank, size = (ranks.rank, ranks.size) if ranks else (0, 1)
    n = x.shape[0] if limit is None else min(x.shape[0], limit * batch_size)
    bar = _Bar(n, desc) if rank == 0 else None
    seen, total_loss, t0 = 0, 0.0, time.perf_counter()
    for i in range(0, n, batch_size):
        lo, hi = i, min(i + batch_size, n)
        if size > 1:
            lo, hi = ranks.part(lo, hi)
        idx = order[lo:hi] if order is not None else None
        xb = nd.take(x, idx) if idx is not None else x[lo:hi]
        yb = nd.take(y, idx) if idx is not None else y[lo:hi]
        with autograd.record():
            loss = loss_fn(net(xb), yb)
        loss.backward()
        trainer.step(xb.shape[0])
        seen += xb.shape[0]
        if (i // batch_size) % 50 == 0:
            total_loss = loss.mean().asscalar()
        if bar:
            bar.update(hi - lo if size == 1 else min(batch_size, n - i), 'loss %.3f' % total_loss)
    if bar:
        bar.close()
    return seen / (time.perf_counter() - t0), total_loss


def plot_network(sym_file, prefix):
    """Draws the exported graph into prefix.png (Graphviz's dot), or leaves its source in
    prefix.gv where dot is missing; says what it wrote."""
    try:
        graph = mx.viz.plot_network(mx.sym.load(sym_file), title='lenet', save_format='png',
                                    shape={'data': (1, 1, 28, 28)})
    except mx.MXNetError as e:  # the graphviz package is not installed
        print('NOTICE: no picture of the network: %s' % str(e).splitlines()[0])
        return
    try:
        path = graph.render(filename=os.path.basename(prefix), directory=os.path.dirname(prefix),
                            cleanup=True)
        print('network drawn in %s' % path)
    except Exception as e:  # graphviz.ExecutableNotFound and kin: the dot program is missing
        path = graph.save(filename=os.path.basename(prefix) + '.gv',
                          directory=os.path.dirname(prefix))
        print('NOTICE: could not run Graphviz\'s dot (%s); the graph\'s source is in %s'
              % (type(e).__name__, path))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--epochs', type=int, default=3)
    ap.add_argument('--batch-size', type=int, default=64)
    ap.add_argument('--lr', type=float, default=2e-3,
                    help='Adam learning rate at the start (decays along a cosine)')
    ap.add_argument('--data-root', default=None,
                    help='folder with the Fashion-MNIST IDX files (default: MXNet\'s, then '
                         '/usr/share/datasets/fashion-mnist)')
    ap.add_argument('--output', default='demo-output', help='folder for the exported model')
    ap.add_argument('--compare-batches', type=int, default=30,
                    help='batches trained imperatively before hybridizing (throughput check)')
    ap.add_argument('--plot', action='store_true',
                    help='also write the network as an image (lenet.png; needs the graphviz '
                         'package and its dot program) and a profile trace of the first '
                         'epoch (profile.json) into --output')
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    ranks = _Ranks()
    say = print if ranks.rank == 0 else (lambda *a, **k: None)
    if args.batch_size % ranks.size:
        say('the global batch size %d must be a multiple of the %d processes'
            % (args.batch_size, ranks.size))
        return 2
    say('hybridgluon %s demo: LeNet (the seed tutorial\'s Net) on Fashion-MNIST'
        % mx.__version__)
    if ranks.size > 1:
        say('data-parallel on %d processes (MPI): global batch %d, %d per process'
            % (ranks.size, args.batch_size, args.batch_size // ranks.size))

    x_train, y_train, x_test, y_test, source = load_data(args.data_root)
    say('data: %s' % source)
    mx.random.seed(42)
    net = Net()
    net.initialize(mx.init.Xavier())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    # Adam with a cosine decay of the learning rate over the whole run.
    steps = (args.epochs * x_train.shape[0] + 2 * (args.compare_batches + 1) * args.batch_size) \
        // args.batch_size + 1
    schedule = mx.lr_scheduler.CosineScheduler(max_update=steps, base_lr=args.lr,
                                               final_lr=args.lr * 0.02)
    opt_params = {'learning_rate': args.lr, 'lr_scheduler': schedule}
    if ranks.size > 1:
        from hybridgluon import distributed as dist
        dist.broadcast_parameters(net.collect_params())  # rank 0's weights, once known
        trainer = dist.DistributedTrainer(net.collect_params(), 'adam', opt_params)
    else:
        trainer = gluon.Trainer(net.collect_params(), 'adam', opt_params)

    # Imperative first (what a user debugs with), then the same network hybridized.
    # One untimed batch each first: deferred initialisation, then tracing and planning.
    n = args.compare_batches
    kw = dict(ranks=ranks)
    train_epoch(net, trainer, loss_fn, x_train, y_train, args.batch_size, 'warm-up    ',
                limit=1, **kw)
    imp_sps, _ = train_epoch(net, trainer, loss_fn, x_train, y_train, args.batch_size,
                             'imperative ', limit=n, **kw)
    net.hybridize(static_alloc=True)
    train_epoch(net, trainer, loss_fn, x_train, y_train, args.batch_size, 'warm-up    ',
                limit=1, **kw)
    hyb_sps, _ = train_epoch(net, trainer, loss_fn, x_train, y_train, args.batch_size,
                             'hybridized ', limit=n, **kw)
    say('training throughput: imperative %.0f img/s, hybridized %.0f img/s (%.2fx)%s'
        % (imp_sps, hyb_sps, hyb_sps / imp_sps, ' on rank 0' if ranks.size > 1 else ''))

    history = []
    rng = np.random.default_rng(0)  # the same shuffle on every rank
    os.makedirs(args.output, exist_ok=True)
    trace = os.path.join(args.output, 'profile.json') if args.plot and ranks.rank == 0 else None
    for epoch in range(args.epochs):
        order = nd.array(rng.permutation(x_train.shape[0]), dtype='int32')
        if trace and epoch == 0:  # every op of the hybridized epoch, as it runs
            mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename=trace)
            mx.profiler.set_state('run')
        t0 = time.perf_counter()
        sps, loss = train_epoch(net, trainer, loss_fn, x_train, y_train, args.batch_size,
                                'epoch %d/%d' % (epoch + 1, args.epochs), order=order, **kw)
        if trace and epoch == 0:
            mx.profiler.set_state('stop')
            mx.profiler.dump()
            say('profile of epoch 1 written to %s (open it in https://ui.perfetto.dev or '
                'chrome://tracing)' % trace)
        per_rank = [sps]
        if ranks.size > 1:
            per_rank = list(dist.allgather(nd.array([sps], dtype='float64')).asnumpy())
            print('epoch %d: rank %d of %d trained %.0f img/s' % (epoch + 1, ranks.rank,
                                                                   ranks.size, sps), flush=True)
        if ranks.rank:
            continue
        acc = evaluate(net, x_test, y_test)
        history.append((epoch + 1, loss, acc, sum(per_rank), time.perf_counter() - t0))
        say('epoch %d: loss %.4f, test accuracy %.4f, %.0f img/s%s'
            % (epoch + 1, loss, acc, sum(per_rank),
               ' (all ranks: %s)' % ' + '.join('%.0f' % v for v in per_rank)
               if ranks.size > 1 else ''))
    if ranks.rank:
        return 0  # rank 0 exports and checks the model

    prefix = os.path.join(args.output, 'lenet')
    net.export(prefix, epoch=args.epochs)
    sym_file, par_file = prefix + '-symbol.json', prefix + '-%04d.params' % args.epochs
    loaded = gluon.SymbolBlock.imports(sym_file, ['data'], par_file)
    sample = x_test[:256]
    ours, theirs = net(sample).asnumpy(), loaded(sample).asnumpy()
    max_diff = float(np.abs(ours - theirs).max())
    same_top = bool((ours.argmax(1) == theirs.argmax(1)).all())
    print('exported %s and %s; reloaded with SymbolBlock.imports: max |diff| %.2e, same '
          'predictions: %s' % (sym_file, par_file, max_diff, same_top))
    if args.plot:
        plot_network(sym_file, prefix)
    first = int(theirs[0].argmax())
    print('the reloaded model calls test image 0 a %s (label: %s)'
          % (CLASSES[first], CLASSES[int(y_test[0].asscalar())]))

    total = time.perf_counter() - t_start
    print('\nsummary%s' % (' (%d processes)' % ranks.size if ranks.size > 1 else ''))
    print('  %-7s %-9s %-10s %-9s %s' % ('epoch', 'loss', 'test acc', 'img/s', 'seconds'))
    for e, l, a, s, dt in history:
        print('  %-7d %-9.4f %-10.4f %-9.0f %.1f' % (e, l, a, s, dt))
    print('  imperative vs hybridized training: %.0f vs %.0f img/s (%.2fx)'
          % (imp_sps, hyb_sps, hyb_sps / imp_sps))
    print('  export reload check: %s (max |diff| %.1e)' % ('ok' if same_top and max_diff < 1e-4
                                                           else 'MISMATCH', max_diff))
    print('  data: %s; total time %.1f s' % (source, total))
    if not same_top or max_diff >= 1e-4:
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
