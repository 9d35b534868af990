"""sparseps.compress against plain torch references written here."""

import pytest
import torch

import sparseps
from sparseps import compress


def reference_topk(x: torch.Tensor, k: int):
    """The k largest |x| (ties: lower index first), indices increasing."""
    flat = x.reshape(-1)
    order = sorted(range(flat.numel()), key=lambda i: (-abs(flat[i].item()), i))[:k]
    idx = torch.tensor(sorted(order), dtype=torch.int64)
    return idx, flat[idx]


@pytest.mark.parametrize("n,density", [(1, 0.5), (100, 0.1), (1000, 0.01), (5000, 0.003)])
def test_topk_matches_a_sorted_reference(n, density):
    x = torch.randn(n, generator=torch.Generator().manual_seed(n))
    k = max(1, int(n * density))
    assert compress.topk_count(n, density) == k
    indices, values = compress.topk(x, density)
    want_idx, want_val = reference_topk(x, k)
    assert indices.dtype == torch.int64 and values.dtype == torch.float32
    assert torch.equal(indices, want_idx)
    assert torch.equal(values, want_val)


def test_topk_breaks_ties_by_lower_index_and_takes_any_shape():
    x = torch.tensor([[1.0, -3.0, 3.0], [0.5, 3.0, -1.0]])
    indices, values = compress.topk(x, 2 / 6)
    assert indices.tolist() == [1, 2]
    assert values.tolist() == [-3.0, 3.0]
    big = torch.randn(64, 3, 3, 3, generator=torch.Generator().manual_seed(1))
    i, v = compress.topk(big, 0.05)
    assert torch.equal(i, torch.topk(big.abs().reshape(-1), i.numel()).indices.sort().values)
    want = torch.zeros(big.numel())
    want[i] = v
    assert torch.equal(compress.decompress(i, v, big.shape).reshape(-1), want)


def test_threshold_keeps_every_magnitude_at_or_above_it():
    x = torch.randn(10000, generator=torch.Generator().manual_seed(2))
    indices, values = compress.threshold(x, 1.5)
    want = (x.abs() >= 1.5).nonzero().reshape(-1)
    assert torch.equal(indices, want)
    assert torch.equal(values, x[want])


def test_sampled_topk_lands_between_0_8k_and_k_above_its_threshold():
    x = torch.randn(200000, generator=torch.Generator().manual_seed(3))
    k = compress.topk_count(x.numel(), 0.001)
    indices, values, thr = compress.sampled_topk(x, 0.001, seed=9)
    assert 0.8 * k <= indices.numel() <= k
    assert bool((values.abs() >= thr).all())
    assert torch.equal(values, x[indices])
    assert bool((indices[1:] > indices[:-1]).all())


def test_random_k_is_distinct_reproducible_and_reads_the_values():
    x = torch.randn(1000, generator=torch.Generator().manual_seed(4))
    i1, v1 = compress.random_k(x, 0.05, seed=7)
    i2, _ = compress.random_k(x, 0.05, seed=7)
    i3, _ = compress.random_k(x, 0.05, seed=8)
    assert i1.numel() == 50 and len(set(i1.tolist())) == 50
    assert torch.equal(i1, i2) and not torch.equal(i1, i3)
    assert torch.equal(v1, x[i1])


def test_bad_inputs_are_value_errors():
    with pytest.raises(ValueError, match="contiguous float32 CPU"):
        compress.topk(torch.randn(10, dtype=torch.float64), 0.1)
    with pytest.raises(ValueError, match="contiguous float32 CPU"):
        compress.topk(torch.randn(4, 4).t(), 0.1)
    with pytest.raises(ValueError, match="density must be in"):
        compress.topk(torch.randn(10), 0.0)
    with pytest.raises(ValueError, match="density must be in"):
        compress.random_k(torch.randn(10), 1.5)
    for bad in (float("nan"), float("inf")):  # a NaN would select nothing
        with pytest.raises(ValueError, match="finite number"):
            compress.threshold(torch.randn(10), bad)


def test_cuda_tensors_are_for_the_selection_functions_only():
    meta = torch.empty(8, device="meta")
    for fn, args in [(compress.topk, (0.5,)), (compress.threshold, (0.1,)),
                     (compress.sampled_topk, (0.5,))]:
        with pytest.raises(ValueError, match="contiguous float32 CPU or CUDA tensor"):
            fn(meta, *args)
    with pytest.raises(ValueError, match="contiguous float32 CPU tensor"):
        compress.random_k(meta, 0.5)
    assert isinstance(compress.HAS_CUDA_KERNELS, bool)


@pytest.mark.skipif(not (torch.cuda.is_available() and compress.HAS_CUDA_KERNELS),
                    reason="no CUDA device (or a build without the CUDA kernels)")
def test_a_cuda_tensor_selects_on_the_gpu_as_on_the_cpu():
    x = torch.randn(100003, generator=torch.Generator().manual_seed(9))
    gx = x.cuda()
    for name, args in [("topk", (0.01,)), ("threshold", (2.5,)), ("sampled_topk", (0.01, 5))]:
        on_cpu = getattr(compress, name)(x, *args)
        on_gpu = getattr(compress, name)(gx, *args)
        for a, b in zip(on_cpu, on_gpu):
            if isinstance(a, torch.Tensor):
                assert b.device.type == "cpu" and torch.equal(a, b), name
            else:
                assert a == b, name


def test_every_registry_compressor_is_there_by_name():
    names = compress.compressor_names()
    for name in ["topk", "qsgd", "terngrad", "signsgd", "onebit", "natural", "fp16", "bf16",
                 "powersgd", "randomk"]:
        assert name in names
        assert name in compress.compressors_help()
    with pytest.raises(ValueError, match="unknown compressor 'nope'; known: bf16"):
        compress.Compressor("nope")
    with pytest.raises(ValueError, match="levels"):
        compress.Compressor("qsgd:levels=0")


def test_compressed_bytes_decode_to_each_rule():
    x = torch.randn(40, 25, generator=torch.Generator().manual_seed(11))
    # top-k: the k largest magnitudes, zeros elsewhere.
    got = compress.decode(compress.Compressor("topk").compress(x, 0.02, key=4), x.shape, key=4)
    idx, vals = reference_topk(x, 20)
    want = torch.zeros(x.numel())
    want[idx] = vals
    assert torch.equal(got.reshape(-1), want)
    # fp16: the nearest half.
    got = compress.decode(compress.Compressor("fp16").compress(x), x.shape)
    assert torch.equal(got, x.half().float())
    # signSGD: the mean magnitude with each element's sign (sign(0) = +).
    got = compress.decode(compress.Compressor("signsgd").compress(x), x.shape)
    scale = x.abs().mean()
    assert torch.allclose(got, torch.where(x < 0, -scale, scale), rtol=1e-5)
    # PowerSGD views the tensor as 40 x 25 and sends rank 2.
    got = compress.decode(compress.Compressor("powersgd:rank=2").compress(x), x.shape)
    singular = torch.linalg.svdvals(got.double())
    assert singular[1] > 0.1 * singular[0] and singular[2] < 1e-5 * singular[0]


def test_payload_bytes_grow_by_each_codes_width():
    # The difference between 2n and n elements is the packed codes alone.
    a, b = torch.randn(8000), torch.randn(16000)
    for spec, bits in [("signsgd", 1), ("terngrad", 2), ("natural", 9), ("fp16", 16),
                       ("qsgd:levels=4,bucket=0", 4), ("dense", 32)]:
        c = compress.Compressor(spec)
        assert len(c.compress(b)) - len(c.compress(a)) == 8000 * bits // 8, spec


def test_error_feedback_loses_nothing():
    c = compress.Compressor("signsgd", error_feedback=True)
    xs = [torch.randn(300, generator=torch.Generator().manual_seed(s)) for s in range(5)]
    sent = torch.zeros(300, dtype=torch.float64)
    for step, x in enumerate(xs):
        sent += compress.decode(c.compress(x, key=2, step=step), [300], key=2).double()
    inputs = sum(x.double() for x in xs)
    assert torch.allclose(sent + c.residual(2, 300).double(), inputs, atol=1e-4)
    assert c.residual(2, 300).abs().sum() > 0  # something was held back
    assert torch.equal(c.residual(9, 300), torch.zeros(300))


def test_a_key_reused_for_a_tensor_of_another_size_keeps_its_residual():
    c = compress.Compressor("signsgd", error_feedback=True)
    c.compress(torch.randn(300), key=4)
    kept = c.residual(4, 300).clone()
    assert kept.abs().sum() > 0
    with pytest.raises(ValueError, match="key 4 holds the residual of 300 elements"):
        c.compress(torch.randn(200), key=4)
    assert torch.equal(c.residual(4, 300), kept)
    c.compress(torch.randn(200), key=5)  # its own key: fine


def test_a_non_finite_gradient_is_refused_not_sent_as_finite_codes():
    x = torch.randn(100)
    x[37] = float("nan")
    for name in compress.compressor_names():
        if name == "randomk":
            continue  # sends a seeded subset; the C++ wire tests cover it
        with pytest.raises(ValueError):
            payload = compress.Compressor(name).compress(x, key=0)
            compress.decode(payload, [100], key=0)


def test_bad_bytes_and_wrong_keys_are_value_errors():
    x = torch.randn(100)
    payload = compress.Compressor("qsgd").compress(x, key=1)
    flipped = bytearray(payload)
    flipped[-1] ^= 1
    with pytest.raises(ValueError, match="checksum"):
        compress.decode(bytes(flipped), [100], key=1)
    with pytest.raises(ValueError, match="segment id"):
        compress.decode(payload, [100], key=2)
    with pytest.raises(ValueError):
        compress.decode(payload, [99], key=1)
    with pytest.raises(ValueError, match="truncated|short|bytes"):
        compress.decode(payload[:10], [100], key=1)
    with pytest.raises(ValueError, match="contiguous float32 CPU"):
        compress.Compressor("qsgd").compress(x.double())
    with pytest.raises(ValueError, match="density"):
        compress.Compressor("topk").compress(x, 0.0)
