"""What attention computes: the mechanisms, each in numpy or torch (softmax and scaled dot-product
attention, masks, the multi-head module, scaling, positions, grouped-query and latent attention,
KV caches, tiled attention …). Imports only :mod:`book.kit`."""
