"""Dask on several OpenCL devices: one ``dask.distributed`` worker process per device.

Install with the ``dask`` extra (``pip install hostarray[dask]``).
:class:`LocalDeviceCluster` is a :class:`distributed.LocalCluster` whose workers each
hold one OpenCL device: the worker process starts with that device as its default
(``HOSTARRAY_DEVICE``), so ``ha.asarray(block)`` in a task puts the block there, and
with a worker resource named after it (:func:`resource`), so tasks can be pinned to
it.  Inside a task, :func:`worker_device` says which device the worker holds,
:func:`program` gives a :class:`~hostarray.Program` built once per worker process,
:func:`to_worker_device` is the ``map_blocks`` function that puts chunks there and
:func:`device_task` makes a block function end when its launches do.

What the workers started by :class:`LocalDeviceCluster` (or by ``dask worker
--preload hostarray.dask``, :func:`dask_setup`) do differently from plain Dask workers:

* A chunk that reaches a worker from another process (a dependency computed on
  another worker, a spilled chunk read back) lands on *this* worker's device, so
  that tasks combining chunks from several workers (the aggregation of a
  reduction, ``x.compute()``'s concatenation) find them on one device.  The sender
  acquires only that chunk's bytes, once; the receiver adopts the bytes it got
  (no further copy where the device's alignment allows).  In the client a result
  is on the device of the worker that computed it, where the client has that
  device (as ``pickle`` places it).
* A hostarray error raised in a task (:class:`~hostarray.errors.LaunchFailed`,
  ``BuildFailed`` ...) reaches the client with ``e.worker``, the worker's address,
  and a note naming the worker and its device; ``e.device`` names the device.  A
  chunk sent to the client whose launch failed raises that failure in the client.

Importing this module also tells Dask a ``HostPtrArray``'s size (``dask.sizeof``: its
``nbytes``), which the scheduler weighs transfers and memory with.  For example:

>>> import numpy as np, hostarray as ha, dask.array as da
>>> from hostarray.dask import LocalDeviceCluster, to_worker_device
>>> from distributed import Client
>>> with LocalDeviceCluster(dashboard_address=None) as cluster, Client(cluster) as client:
...     x = da.from_array(np.arange(8.0).reshape(2, 4), chunks=2).map_blocks(to_worker_device)
...     means = x.mean(axis=0).compute()  # a HostPtrArray
...     total = x.sum().compute()         # a numpy scalar, as numpy's x.sum() gives
...     held = set(cluster.devices.values())
>>> type(means).__name__, np.asarray(means).tolist(), float(total)
('HostPtrArray', [2.0, 3.0, 4.0, 5.0], 28.0)
>>> held <= set(ha.devices())
True
"""

from __future__ import annotations

import copy
import copyreg
import functools
import json
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import errors
from ._array import HostPtrArray
from ._devices import Device, default_device, devices
from ._devices import device as _device
from .errors import DeviceUnavailable

if TYPE_CHECKING:
    from .kernels import Program

try:
    from dask.sizeof import sizeof
    from distributed import LocalCluster
except ImportError as e:  # pragma: no cover - the extra is not installed
    raise ImportError("hostarray.dask needs dask.distributed: pip install 'hostarray[dask]'"
                      ) from e

__all__ = ["LocalDeviceCluster", "worker_device", "program", "to_worker_device", "device_task",
           "resource", "dask_setup"]

# The environment of a device worker: its device (hostarray's own variable) and what
# the client saw under that name, to check that the worker sees the same device.
_DEVICE_ENV = "HOSTARRAY_DEVICE"
_EXPECT_ENV = "HOSTARRAY_DASK_DEVICE"


class _WorkerState:
    """What :func:`dask_setup` learnt in this worker process."""

    def __init__(self) -> None:
        self.device: Device | None = None
        self.worker: Any = None  # the distributed.Worker
        self.failure: str | None = None  # why its device does not work here

    @property
    def address(self) -> str | None:
        return getattr(self.worker, "address", None)


_WORKER = _WorkerState()
_LOCK = threading.Lock()
_PROGRAMS: dict[tuple[int, str, str, tuple[str, ...]], Program] = {}


def resource(device: Device | str) -> str:
    """The name of the worker resource of ``device``: its device string, ``"opencl:P:D"``.

    Every worker of a :class:`LocalDeviceCluster` has one unit of its device's
    resource: pin a task with ``client.submit(f, resources={resource(dev): 1})`` or a
    graph with ``dask.annotate(resources={resource(dev): 1})`` (computed or persisted
    with ``optimize_graph=False``: optimizing the graph drops its annotations).

    Parameters
    ----------
    device : Device or str
        An OpenCL device, or its name.

    Returns
    -------
    str
        The resource's name.

    Raises
    ------
    InvalidDevice, UnknownFramework, DeviceUnavailable
        ``device`` names no working device (see :func:`hostarray.device`).

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray.dask import resource
    >>> resource("opencl:0:0")
    'opencl:0:0'
    >>> resource(ha.devices()[-1]) == str(ha.devices()[-1])
    True
    """
    return str(_device(device))


def worker_device() -> Device:
    """The device of this worker process: the one its :class:`LocalDeviceCluster` (or
    ``HOSTARRAY_DEVICE`` with ``--preload hostarray.dask``) gave it.

    Call it in a task, or on every worker with ``client.run(worker_device)`` (a
    mapping of worker addresses to devices).  Outside a device worker it is
    :func:`hostarray.default_device`.

    Returns
    -------
    Device
        The worker's device.

    Raises
    ------
    DeviceUnavailable
        This worker's device failed at its start (:func:`dask_setup` recorded why).

    Examples
    --------
    >>> import hostarray as ha
    >>> from hostarray.dask import worker_device
    >>> worker_device() == ha.default_device()  # not in a worker here
    True
    """
    dev = _WORKER.device
    if dev is None and _WORKER.failure:
        raise DeviceUnavailable(os.environ.get(_DEVICE_ENV, "?"), _WORKER.failure)
    return dev if dev is not None else default_device()


def program(source: str, options: str | Sequence[str] | None = ()) -> Program:
    """The :class:`~hostarray.Program` of ``source`` on this worker's device, built once
    per worker process (and device, source and options) and cached.

    Call it inside the task (``map_blocks`` function): the program is built the first
    time and found again by the next tasks, instead of being pickled with every task
    (a ``Program`` holds driver objects that do not pickle).

    Parameters
    ----------
    source : str
        OpenCL C source.
    options : str or sequence of str, optional
        Build options, as :class:`~hostarray.Program` takes them.

    Returns
    -------
    Program
        Built for :func:`worker_device`, or for the first OpenCL device where that is
        the host (outside a device worker, with ``HOSTARRAY_DEVICE`` unset).

    Raises
    ------
    BuildFailed, TypeError, ValueError, DeviceUnavailable
        As :class:`~hostarray.Program` raises them: the source does not compile, bad
        options, or no working OpenCL device.

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> from hostarray.dask import program
    >>> src = "__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2; }"
    >>> prg = program(src)
    >>> program(src) is prg  # cached
    True
    >>> x = ha.asarray(np.ones(4, np.float32), device=prg.device)
    >>> _ = prg.twice(x.shape, x)
    >>> np.asarray(x).tolist()
    [2.0, 2.0, 2.0, 2.0]
    """
    from .kernels import Program, _build_options

    dev = worker_device()
    opts = _build_options(options)
    key = (os.getpid(), str(dev), source, opts)
    with _LOCK:
        prg = _PROGRAMS.get(key)
        if prg is None:
            prg = _PROGRAMS[key] = Program(source, device=dev if dev.framework == "opencl"
                                           else None, options=opts)
    return prg


def to_worker_device(block: Any) -> HostPtrArray:
    """``block`` (a numpy array, a ``HostPtrArray``, anything ``ha.asarray`` takes) as a
    ``HostPtrArray`` on this worker's device: the function for ``x.map_blocks``.

    Shares the block's memory where the device can use it (``ha.asarray``'s rule), so
    nothing is copied on a device that works on host memory.

    Parameters
    ----------
    block : array_like
        A chunk.

    Returns
    -------
    HostPtrArray
        On :func:`worker_device`.

    Examples
    --------
    >>> import numpy as np
    >>> from hostarray.dask import to_worker_device, worker_device
    >>> to_worker_device(np.arange(3.0)).device == worker_device()
    True
    """
    from ._api.creation import asarray

    return asarray(block, device=worker_device())


def device_task(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` as a task whose device work is finished when it returns: after ``func``,
    the launches that use the bytes of the arrays it returns (a ``HostPtrArray``, or a
    tuple, list or dict of them) are waited for, so that a launch that failed raises
    :class:`~hostarray.errors.LaunchFailed` as *this task's* error.

    Launches are asynchronous: without this, a failure is raised by whatever meets it
    first: the next task on the worker that uses the chunk (that task fails), the
    client's ``compute``/``gather`` (it raises there) or, for a chunk sent to another
    worker, nobody: Dask logs the failed transfer on both workers and the task that
    needed the chunk waits for good (dask/distributed#6705).  Decorate the functions
    that launch kernels (``x.map_blocks(device_task(f))``, or ``@device_task``).

    Parameters
    ----------
    func : callable
        The block function.

    Returns
    -------
    callable
        ``func`` with its results' launches waited for (it pickles by reference where
        ``func`` is a module's function decorated in place).

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> from hostarray.dask import device_task, program
    >>> src = "__kernel void inc(__global float *x) { x[get_global_id(0)] += 1; }"
    >>> @device_task
    ... def inc(block):
    ...     out = ha.asarray(block, copy=True, device=program(src).device)
    ...     program(src).inc(out.shape, out)
    ...     return out
    >>> np.asarray(inc(np.zeros(3, np.float32))).tolist()
    [1.0, 1.0, 1.0]
    """

    @functools.wraps(func)
    def task(*args: Any, **kwargs: Any) -> Any:
        result = func(*args, **kwargs)
        for x in _arrays_in(result):
            _settle(x)
        return result

    return task


def _arrays_in(result: Any) -> list[HostPtrArray]:
    if isinstance(result, HostPtrArray):
        return [result]
    if isinstance(result, dict):
        result = list(result.values())
    if isinstance(result, (tuple, list)):
        return [x for x in result if isinstance(x, HostPtrArray)]
    return []


def _settle(x: HostPtrArray) -> None:
    """Wait for the launches that use ``x``'s bytes (nothing moves); a failed one raises
    :class:`~hostarray.errors.LaunchFailed` (once, as every host access would)."""
    s = x._s
    if not (s.host_stale or s.unreported):
        return
    with s.lock:
        if s.unreported:
            s._report_pending()
        coh = s.coh
        if coh is not None and coh.inflight:
            _, lo, hi = x._bytes()
            s._wait_for(coh.hazards_for_host_write(lo, hi))  # they read or write those bytes


def _default_devices() -> list[Device]:
    opencl = [d for d in devices() if d.framework == "opencl"]
    # a GPU: not a device that reports every type (Oclgrind: "GPU | CPU | ACCELERATOR")
    gpus = [d for d in opencl if "GPU" in d.type.split(" | ") and "CPU" not in d.type]
    return gpus or opencl


def _identity(dev: Device) -> str:
    """What tells a device from another with the same index: its name and platform."""
    platform = dev._cl_device.platform
    return f"{dev.name} ({platform.name.strip()}, {platform.version.strip()})"


class LocalDeviceCluster(LocalCluster):
    """A :class:`distributed.LocalCluster` with one worker process per OpenCL device.

    Each worker is named after its device (``"opencl:P:D"``), starts with it as its
    default device (``HOSTARRAY_DEVICE`` in its environment: ``ha.asarray(block)``,
    :func:`to_worker_device` and :func:`program` in a task use it) and has one unit of
    the worker resource :func:`resource` names.  The workers inherit this process's
    environment (the same OpenCL drivers, ``OCL_ICD_VENDORS`` included, so device
    indices mean the same devices there); each checks at start that its device works
    and is the one this process sees under that name.

    Parameters
    ----------
    devices : iterable of Device or str, optional
        The devices, one worker each.  Default: every OpenCL GPU, else every OpenCL
        device (``ha.devices()``).
    threads_per_worker : int, optional
        Threads per worker (default 1: one task at a time on each device).
    env : dict of str to str, optional
        More environment variables for the workers (``{"HOSTARRAY_LINK": "copied"}``);
        ``HOSTARRAY_DEVICE`` is set by the cluster.
    **kwargs
        Passed to :class:`distributed.LocalCluster` (``dashboard_address=None``,
        ``memory_limit``, ``silence_logs`` ...); ``processes`` is always true and
        ``n_workers`` is the number of devices.

    Attributes
    ----------
    devices : dict of str to Device
        The running workers' addresses and their devices.
    device_list : tuple of Device
        The devices the cluster was made for, in order.

    Raises
    ------
    DeviceUnavailable
        A device failed its probe (here, or in its worker process: no worker is left
        running then); the message names it.
    InvalidDevice
        A device string names no device here.
    ValueError
        No OpenCL device, a device named twice, or a host device.

    Examples
    --------
    >>> import hostarray as ha
    >>> from distributed import Client
    >>> from hostarray.dask import LocalDeviceCluster, resource, worker_device
    >>> dev = [d for d in ha.devices() if d.framework == "opencl"][0]
    >>> with LocalDeviceCluster([dev], dashboard_address=None) as cluster:
    ...     with Client(cluster) as client:
    ...         held = client.run(worker_device)
    ...         pinned = client.submit(worker_device, resources={resource(dev): 1}).result()
    ...     assert list(held.values()) == [dev] and held == cluster.devices
    >>> pinned == dev
    True
    """

    def __init__(self, devices: Iterable[Device | str] | None = None, *,
                 threads_per_worker: int = 1, env: dict[str, str] | None = None,
                 **kwargs: Any) -> None:
        devs = _default_devices() if devices is None else [_device(d) for d in devices]
        if not devs:
            raise ValueError("LocalDeviceCluster: no OpenCL device here (ha.devices() lists "
                             "none): install an OpenCL driver, or use a LocalCluster")
        for d in devs:
            if d.framework != "opencl":
                raise ValueError(f"LocalDeviceCluster: {d} is not an OpenCL device; name "
                                 f"OpenCL devices ('opencl:P:D')")
        names = [str(d) for d in devs]
        if len(set(names)) != len(names):
            raise ValueError(f"LocalDeviceCluster: a device is named twice in {names}")
        if kwargs.get("asynchronous"):
            raise TypeError("LocalDeviceCluster is synchronous: it checks its workers' "
                            "devices before it returns")
        for name in ("n_workers", "processes"):
            if name in kwargs:
                raise TypeError(f"LocalDeviceCluster takes no {name!r}: one worker process "
                                f"per device")
        extra = dict(env or {})
        if _DEVICE_ENV in extra or _EXPECT_ENV in extra:
            raise ValueError(f"LocalDeviceCluster sets {_DEVICE_ENV} for each worker; pass "
                             f"devices= instead")
        for d in devs:
            d.runtime  # noqa: B018 - a device that does not work here fails now, by name
        self.device_list: tuple[Device, ...] = tuple(devs)
        self._extra_env = extra
        self._expect = {str(d): _identity(d) for d in devs}
        preload = list(kwargs.pop("preload", None) or [])
        if "hostarray.dask" not in preload:
            preload.append("hostarray.dask")
        if kwargs.get("memory_limit", "auto") == "auto":  # this machine's memory, shared
            import logging

            from distributed.worker_memory import parse_memory_limit

            kwargs["memory_limit"] = parse_memory_limit(
                "auto", 1, len(devs), logger=logging.getLogger("distributed.worker.memory"))
        super().__init__(n_workers=0, processes=True, threads_per_worker=threads_per_worker,
                         preload=preload, **kwargs)
        try:
            for _ in devs:
                self.worker_spec.update(self.new_worker_spec())
            self.sync(self._correct_state)
            self._check_started()
        except BaseException:
            self.close()
            raise

    def new_worker_spec(self) -> dict[str, dict[str, Any]]:
        """The spec of the next worker: the first device that has none (its name, its
        environment, its resource).

        Returns
        -------
        dict
            ``{name: spec}`` for :meth:`scale`.

        Raises
        ------
        ValueError
            Every device has a worker (a cluster does not grow beyond its devices).
        """
        free = [d for d in self.device_list if str(d) not in self.worker_spec]
        if not free:
            raise ValueError(f"LocalDeviceCluster: every device has its worker "
                             f"({[str(d) for d in self.device_list]}); it scales to at "
                             f"most {len(self.device_list)}")
        dev = free[0]
        spec = copy.deepcopy(self.new_spec)
        opts = spec["options"]
        opts["env"] = {**opts.get("env", {}), **self._extra_env, _DEVICE_ENV: str(dev),
                       _EXPECT_ENV: json.dumps({"device": str(dev),
                                                "identity": self._expect[str(dev)]})}
        opts["resources"] = {**opts.get("resources", {}), resource(dev): 1}
        return {str(dev): spec}

    def _check_started(self) -> None:
        """Every device has a running worker whose device works there; else raise
        :class:`DeviceUnavailable` naming the devices (the caller closes the cluster)."""
        from distributed import Client

        failed = {str(d): "its dask worker did not start (its log above says why)"
                  for d in self.device_list if not getattr(self.workers.get(str(d)),
                                                           "worker_address", None)}
        if not failed:
            with Client(self, set_as_default=False) as client:
                reports = client.run(_setup_failure)
            failed = {self._device_at(a): why for a, why in reports.items() if why}
        if failed:
            raise DeviceUnavailable(", ".join(failed), "; ".join(
                f"{d}: {why}" for d, why in failed.items()) + "; no worker is left running")

    def _device_at(self, address: str) -> str:
        for name, w in self.workers.items():
            if getattr(w, "worker_address", None) == address:
                return str(name)
        return address

    @property
    def devices(self) -> dict[str, Device]:
        """The running workers' addresses and the devices they hold."""
        by_name = {str(d): d for d in self.device_list}
        out = {}
        for name, w in list(self.workers.items()):
            address = getattr(w, "worker_address", None)
            if address and name in by_name:
                out[address] = by_name[name]
        return out

    def worker_address(self, device: Device | str) -> str:
        """The address of the worker that holds ``device``.

        Parameters
        ----------
        device : Device or str
            One of :attr:`device_list`.

        Returns
        -------
        str
            The worker's address (``client.submit(..., workers=[address])``).

        Raises
        ------
        KeyError
            No running worker holds ``device``.
        """
        want = _device(device)
        for address, dev in self.devices.items():
            if dev == want:
                return address
        raise KeyError(f"no running worker holds {want}; the workers hold "
                       f"{sorted(map(str, self.devices.values()))}")


# -- in the worker process -------------------------------------------------------------------

def dask_setup(worker: Any) -> None:
    """The worker's start (``--preload hostarray.dask``): check and take its device.

    Reads ``HOSTARRAY_DEVICE`` (set by :class:`LocalDeviceCluster`; by hand for
    ``HOSTARRAY_DEVICE=opencl:1:0 dask worker ADDRESS --preload hostarray.dask
    --resources opencl:1:0=1``), checks that the device works in this process and is
    the one the cluster's process saw under that name, and sets up what the module
    docstring lists (chunks arriving here land on this device; errors name the
    worker).  Raises, and so stops the worker from starting, where the device does
    not work here.

    Parameters
    ----------
    worker : distributed.Worker
        The worker being started.

    Raises
    ------
    DeviceUnavailable
        The device fails its probe in this process, or it is another device than the
        cluster's process saw under that name.

    Examples
    --------
    dask calls it in each worker process started with ``--preload hostarray.dask``
    (:class:`LocalDeviceCluster` passes that option itself)::

        HOSTARRAY_DEVICE=opencl:0:0 dask worker tcp://127.0.0.1:8786 --preload hostarray.dask

    >>> import hostarray.dask
    >>> hostarray.dask.dask_setup.__name__   # the name dask's preload looks up
    'dask_setup'
    """
    spec = os.environ.get(_DEVICE_ENV, "").strip()
    expect = json.loads(os.environ.get(_EXPECT_ENV) or "{}")
    _WORKER.worker = worker
    try:
        dev = _device(spec or None)
        if dev.framework == "opencl":
            dev.runtime  # noqa: B018 - its context and queue work
    except errors.HostPtrError as e:
        _WORKER.failure = f"the dask worker cannot use it: {e}"
        raise DeviceUnavailable(spec or "the default device", _WORKER.failure) from e
    if expect.get("identity") and dev.framework == "opencl" \
            and _identity(dev) != expect["identity"]:
        _WORKER.failure = (f"the dask worker sees {_identity(dev)} under that name, the "
                           f"cluster's process {expect['identity']}: the worker must see the "
                           f"same OpenCL drivers (OCL_ICD_VENDORS)")
        raise DeviceUnavailable(spec, _WORKER.failure)
    _WORKER.device = dev
    copyreg.pickle(HostPtrArray, _reduce_array)
    _name_the_worker_in_errors()


def _nbytes(x: HostPtrArray) -> int:
    """``dask.sizeof`` of a chunk: its bytes (the default, ``sys.getsizeof``, gives 72)."""
    return int(x.nbytes)


sizeof.register(HostPtrArray)(_nbytes)


def _setup_failure() -> str | None:
    """Why :func:`dask_setup` could not take this worker's device (``None``: it did)."""
    return _WORKER.failure


def _reduce_array(x: HostPtrArray) -> tuple[Any, ...]:
    """Pickling a chunk in a device worker: hostarray's own reduction (the chunk's bytes
    acquired, once; a private copy, so a protocol-5 pickler may send it out of band),
    rebuilt by :func:`_rebuild` on the receiving side.

    Where acquiring meets a launch that failed, the receiving side gets that
    :class:`~hostarray.errors.LaunchFailed` instead of the chunk (raised as it unpickles:
    in the client's ``compute``/``gather``, or as the error of the task that needed the
    chunk on another worker).  Raising it here would lose it: Dask pickles again after
    a failed pickling, and the second time the failure is reported already (hostarray
    reports each failure once) and the bytes the launch left would travel."""
    from ._interop import reduce

    try:
        _, (a, device_key) = reduce(x, 5)
    except errors.LaunchFailed as e:
        return (_raise, (e,))
    return (_rebuild, (a, device_key))


def _raise(error: BaseException) -> Any:
    """Unpickling a chunk whose launch failed: raise the failure."""
    raise error


def _rebuild(a: np.ndarray, device_key: str) -> HostPtrArray:
    """Unpickling a chunk that a device worker sent: on this worker's device in a device
    worker, else on the device it was on where this process has it (else the host)."""
    from ._interop import _rebuild as rebuild

    here = _WORKER.device
    return rebuild(a, str(here) if here is not None else device_key)


_ORIGINAL_REDUCE = errors.HostPtrError.__reduce__


def _reduce_naming_the_worker(self: errors.HostPtrError) -> tuple[Any, ...]:
    """A hostarray error leaving a device worker (a task's error, pickled for the
    client): it takes the worker's address (``e.worker``) and a note naming the worker
    and its device, then pickles as usual."""
    address = _WORKER.address
    if address and getattr(self, "worker", None) is None:
        self.worker = address  # type: ignore[attr-defined]
        self.add_note(f"raised on the dask worker {address}, which holds {_WORKER.device}")
    return _ORIGINAL_REDUCE(self)


def _name_the_worker_in_errors() -> None:
    # in this worker process only: Dask pickles a task's exception through tblib,
    # which calls the exception's own __reduce__ (a copyreg entry would be replaced)
    errors.HostPtrError.__reduce__ = _reduce_naming_the_worker  # type: ignore[method-assign]
