"""descent.fx.experimental, as torch.fx.experimental: proxy_tensor (make_fx)."""
