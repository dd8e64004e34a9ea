"""descent.utils.data: datasets, samplers and the DataLoader, as torch.utils.data.

    ds = TensorDataset(x, y)
    for xb, yb in DataLoader(ds, batch_size=64, shuffle=True, generator=g):
        ...

Pure Python, as torch's is: a DataLoader asks its sampler for indices,
groups them into batches, reads each sample from the dataset and stacks the
samples into batch tensors (default_collate). num_workers is accepted and
the samples are read in the calling process (descent has no worker processes).
"""
from .dataloader import DataLoader, default_collate
from .dataset import ConcatDataset, Dataset, Subset, TensorDataset, random_split
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["Dataset", "TensorDataset", "ConcatDataset", "Subset", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "BatchSampler", "DataLoader", "default_collate"]
