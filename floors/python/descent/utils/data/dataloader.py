"""descent.utils.data.DataLoader and default_collate, as torch.utils.data's."""
import collections.abc

from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_collate"]


def _stack(tensors):
    import descent
    if hasattr(descent, "stack"):
        return descent.stack(tensors, 0)
    return descent.cat([t.unsqueeze(0) for t in tensors], 0)


def default_collate(batch):
    """Samples into a batch, as torch's default_collate: tensors stacked along a new dim 0, Python floats into a
    float64 tensor and ints into an int64 one, numpy arrays stacked as tensors, and tuples, lists and dicts
    collated element by element (a batch of tuples becomes a list of batches)."""
    import descent
    elem = batch[0]
    if isinstance(elem, descent.Tensor):
        return _stack(batch)
    if type(elem).__module__ == "numpy" and type(elem).__name__ in ("ndarray", "memmap"):
        return _stack([descent.tensor(b) for b in batch])
    if type(elem).__module__ == "numpy" and hasattr(elem, "dtype") and elem.shape == ():
        return descent.tensor(batch)
    if isinstance(elem, bool):
        return descent.tensor(batch)
    if isinstance(elem, float):
        return descent.tensor(batch, dtype=descent.float64)
    if isinstance(elem, int):
        return descent.tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return type(elem)(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            return type(elem)([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found "
                    f"{type(elem)}")


class DataLoader:
    """Batches of a dataset: DataLoader(dataset, batch_size=1, shuffle=False, ..., drop_last=False,
    generator=None). shuffle=True reads in a RandomSampler's order (drawn with `generator`); collate_fn
    (default_collate) makes a batch of the samples. Every worker count reads in this process."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else (lambda x: x)
        self.collate_fn = collate_fn

    def __iter__(self):
        if self.batch_sampler is None:  # batch_size=None: one sample at a time, as it is
            for idx in self.sampler:
                yield self.collate_fn(self.dataset[idx])
            return
        for indices in self.batch_sampler:
            yield self.collate_fn([self.dataset[i] for i in indices])

    def __len__(self):
        if self.batch_sampler is None:
            return len(self.sampler)
        return len(self.batch_sampler)
