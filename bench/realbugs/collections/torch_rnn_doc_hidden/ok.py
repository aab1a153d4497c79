"""nn.RNN docstring after the PR: each step builds a fresh list of layer states and stacks it."""
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
    h_t_minus_1 = list(hx)
    output = []
    for t in range(seq_len):
        h_t = []
        for layer in range(rnn.num_layers):
            input_t = x[t] if layer == 0 else h_t[layer - 1]
            h_t.append(torch.tanh(
                input_t @ params[f"weight_ih_l{layer}"].T
                + h_t_minus_1[layer] @ params[f"weight_hh_l{layer}"].T
                + params[f"bias_hh_l{layer}"]
                + params[f"bias_ih_l{layer}"]
            ))
        output.append(h_t[-1])
        h_t_minus_1 = h_t
    output = torch.stack(output)
    h_t = torch.stack(h_t)
    if batch_first:
        output = output.transpose(0, 1)
    return output, h_t


out, _ = forward(torch.randn(5, 2, 3))
out.sum().backward()
