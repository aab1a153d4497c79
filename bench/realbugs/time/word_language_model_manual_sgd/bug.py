"""word_language_model's train(): after backward and gradient clipping, each parameter
is updated with `p.add_(-lr, p.grad)`, an in-place op on a leaf that requires grad.

Source: https://github.com/pytorch/examples/pull/779
Shape: time
Symptom: a leaf Variable that requires grad is being used in an in-place operation
"""
import torch
import torch.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken, ninp=8, nhid=8, nlayers=1):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nlayers, self.nhid = nlayers, nhid

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.encoder(input), hidden)
        return self.decoder(output).view(-1, self.decoder.out_features), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt=5):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


torch.manual_seed(1111)
ntokens, batch_size, bptt, lr, clip = 20, 3, 5, 20.0, 0.25
train_data = torch.randint(0, ntokens, (16, batch_size))
model = RNNModel(ntokens)
criterion = nn.NLLLoss()


def train():
    model.train()
    total_loss = 0.
    hidden = model.init_hidden(batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(torch.log_softmax(output, -1), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.add_(p.grad, alpha=-lr)  # culprit: GG101
        total_loss += loss.item()
    return total_loss


train()
