"""The explanations' words: what they say matches the estimate they describe."""

from scaling_widgets.cost import estimate
from scaling_widgets.presets import HARDWARE, MODELS
from scaling_widgets.text.explain import step_verdict


def test_the_step_verdict_names_the_mfu_given_not_the_one_achieved():
    # pure FSDP over 512 H100 nodes at 4M tokens: its communication shows, the MFU achieved falls
    e = estimate(model=MODELS["llama-3-70b"], chip=HARDWARE["h100"], slice_shape=(512, 8),
                 batch=4e6, seq_len=4096, strategy="fsdp", mfu=0.45)  # fmt: skip
    assert float(e.mfu) < 0.4
    assert "(at 45% MFU given)" in step_verdict(e).parts[0]
    measured = estimate(model=MODELS["llama-3-8b"], chip=HARDWARE["h100"], slice_shape=(8, 8),
                        batch=4e6, seq_len=4096, measured_step_time=6.0)  # fmt: skip
    assert "(as measured)" in step_verdict(measured).parts[0]
    predicted = estimate(model=MODELS["llama-3-8b"], chip=HARDWARE["h100"], slice_shape=(8, 8),
                         batch=4e6, seq_len=4096)  # fmt: skip
    assert "(predicted)" in step_verdict(predicted).parts[0]
