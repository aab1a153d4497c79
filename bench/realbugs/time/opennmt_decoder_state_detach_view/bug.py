"""OpenNMT's truncated BPTT: between chunks the trainer calls dec_state.detach(), which
runs h.detach_() on every tensor of the decoder state; input_feed is stored as
`input_feed.unsqueeze(0)`, a view, and views cannot be detached in place.

Source: https://github.com/OpenNMT/OpenNMT-py/issues/403
Shape: time
Symptom: Can't detach views in-place
"""
import torch
import torch.nn as nn


class DecoderState(object):
    def detach(self):
        for h in self._all:
            if h is not None:
                h.detach_()  # culprit: GG306


class RNNDecoderState(DecoderState):
    def __init__(self, hidden_size, rnnstate):
        self.hidden = rnnstate if isinstance(rnnstate, tuple) else (rnnstate,)
        batch_size = self.hidden[0].size(1)
        self.input_feed = self.hidden[0].new_zeros(batch_size, hidden_size).unsqueeze(0)

    @property
    def _all(self):
        return self.hidden + (self.input_feed,)

    def update_state(self, rnnstate, input_feed):
        self.hidden = rnnstate if isinstance(rnnstate, tuple) else (rnnstate,)
        self.input_feed = input_feed.unsqueeze(0)


class InputFeedDecoder(nn.Module):
    def __init__(self, emb=6, hidden=8):
        super().__init__()
        self.rnn = nn.GRUCell(emb + hidden, hidden)
        self.out = nn.Linear(hidden, 5)

    def forward(self, tgt, state):
        hidden, input_feed = state.hidden[0][0], state.input_feed.squeeze(0)
        outputs = []
        for emb_t in tgt:
            hidden = self.rnn(torch.cat([emb_t, input_feed], 1), hidden)
            input_feed = torch.tanh(hidden)
            outputs.append(self.out(input_feed))
        state.update_state(hidden.unsqueeze(0), input_feed)
        return torch.stack(outputs), state


torch.manual_seed(0)
decoder = InputFeedDecoder()
optim = torch.optim.SGD(decoder.parameters(), lr=0.1)
tgt, gold = torch.randn(6, 2, 6), torch.randint(0, 5, (6, 2))
dec_state = RNNDecoderState(8, torch.zeros(1, 2, 8))
trunc_size = 3
for j in range(0, tgt.size(0), trunc_size):
    outputs, dec_state = decoder(tgt[j:j + trunc_size], dec_state)
    loss = nn.functional.cross_entropy(outputs.view(-1, 5), gold[j:j + trunc_size].reshape(-1))
    optim.zero_grad()
    loss.backward()
    optim.step()
    if dec_state is not None:
        dec_state.detach()
