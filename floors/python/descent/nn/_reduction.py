"""The reduction argument of the losses as the enum the kernels take (torch.nn._reduction):
'none' 0, 'mean' 1, 'sum' 2."""
import warnings


def get_enum(reduction):
    if reduction == "none":
        ret = 0
    elif reduction == "mean":
        ret = 1
    elif reduction == "elementwise_mean":
        warnings.warn("reduction='elementwise_mean' is deprecated. Please use reduction='mean' instead.")
        ret = 1
    elif reduction == "sum":
        ret = 2
    else:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return ret


def legacy_get_string(size_average, reduce, emit_warning=True):
    """The reduction the old size_average and reduce arguments meant."""
    warning = "size_average and reduce args will be deprecated, please use reduction='{}' instead."
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    if emit_warning:
        warnings.warn(warning.format(ret))
    return ret
