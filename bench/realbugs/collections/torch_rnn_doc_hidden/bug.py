"""nn.RNN docstring: the reference loop writes each layer's state into one tensor.

The next layer reads ``h_t[layer - 1]`` through a matmul, which saves that view;
writing ``h_t[layer]`` then changes the tensor it belongs to.

Source: https://github.com/pytorch/pytorch/pull/173888
Shape: collections
Symptom: modified by an inplace operation
"""
import torch
from torch import nn

torch.manual_seed(0)
rnn = nn.RNN(input_size=3, hidden_size=4, num_layers=2)
params = dict(rnn.named_parameters())


def forward(x, hx=None, batch_first=False):
    if batch_first:
        x = x.transpose(0, 1)
    seq_len, batch_size, _ = x.size()
    if hx is None:
        hx = torch.zeros(rnn.num_layers, batch_size, rnn.hidden_size)
    h_t_minus_1 = hx.clone()
    h_t = hx.clone()
    output = []
    for t in range(seq_len):
        for layer in range(rnn.num_layers):
            input_t = x[t] if layer == 0 else h_t[layer - 1]
            h_t[layer] = torch.tanh(  # culprit: GG201
                input_t @ params[f"weight_ih_l{layer}"].T
                + h_t_minus_1[layer] @ params[f"weight_hh_l{layer}"].T
                + params[f"bias_hh_l{layer}"]
                + params[f"bias_ih_l{layer}"]
            )
        output.append(h_t[-1].clone())
        h_t_minus_1 = h_t.clone()
    output = torch.stack(output)
    if batch_first:
        output = output.transpose(0, 1)
    return output, h_t


out, _ = forward(torch.randn(5, 2, 3))
out.sum().backward()
