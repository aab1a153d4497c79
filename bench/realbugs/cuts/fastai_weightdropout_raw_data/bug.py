"""fastai2 AWD-LSTM WeightDropout: the dropped weight is built from raw_w.data, so the raw hidden-to-hidden weight never gets a gradient

Source: https://github.com/fastai/fastai2/pull/427
Shape: cuts
Symptom: weight_hh_l0_raw never gets a gradient
"""
import warnings
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class WeightDropout(nn.Module):
    """After fastai2/text/models/awdlstm.py before #427 (fastai's Module written as nn.Module)."""
    def __init__(self, module, weight_p, layer_names=('weight_hh_l0',)):
        super().__init__()
        self.module, self.weight_p, self.layer_names = module, weight_p, list(layer_names)
        for layer in self.layer_names:
            # Makes a copy of the weights of the selected layers.
            w = getattr(self.module, layer)
            delattr(self.module, layer)
            self.register_parameter(f'{layer}_raw', nn.Parameter(w.data))
            setattr(self.module, layer, F.dropout(w.data, p=self.weight_p, training=False))
            if isinstance(self.module, (nn.RNNBase, nn.modules.rnn.RNNBase)):
                self.module.flatten_parameters = self._do_nothing

    def _setweights(self):
        "Apply dropout to the raw weights."
        for layer in self.layer_names:
            raw_w = getattr(self, f'{layer}_raw')
            setattr(self.module, layer, F.dropout(raw_w.data, p=self.weight_p, training=self.training))  # culprit: -

    def forward(self, *args):
        self._setweights()
        with warnings.catch_warnings():
            # To avoid the warning that comes because the weights aren't flattened.
            warnings.simplefilter("ignore")
            return self.module.forward(*args)

    def _do_nothing(self):
        pass


lstm = nn.LSTM(3, 5, batch_first=True)
lstm_dp = WeightDropout(lstm, weight_p=0.8, layer_names=['weight_hh_l0'])
opt = torch.optim.SGD(lstm_dp.parameters(), lr=0.1)
test_input = torch.randn(8, 20, 3)
test_h = torch.randn(1, 8, 5)
test_c = test_h.data
output, (h, c) = lstm_dp(test_input, (test_h, test_c))
loss = output.sum()
opt.zero_grad()
loss.backward()
opt.step()
assert lstm_dp.module.weight_ih_l0.grad is not None
assert lstm_dp.weight_hh_l0_raw.grad is not None, "weight_hh_l0_raw never gets a gradient"
