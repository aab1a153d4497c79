"""Knowledge-neuron editing writes into columns of a library model's FFN output weight.

Source: https://github.com/Hunter-DDM/knowledge-neurons/issues/14
Shape: elsewhere
Symptom: a view of a leaf Variable that requires grad is being used in an in-place operation
"""
import torch
from torch import nn


class Output(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.dense = nn.Linear(intermediate, hidden)


class Layer(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = Output(hidden, intermediate)

    def forward(self, x):
        return x + self.output.dense(torch.relu(self.intermediate(x)))


class Encoder(nn.Module):
    def __init__(self, layers, hidden, intermediate):
        super().__init__()
        self.layer = nn.ModuleList(Layer(hidden, intermediate) for _ in range(layers))


class Embeddings(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)


class Bert(nn.Module):
    def __init__(self, vocab=30, hidden=8, intermediate=16, layers=3):
        super().__init__()
        self.embeddings = Embeddings(vocab, hidden)
        self.encoder = Encoder(layers, hidden, intermediate)


class BertForMaskedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.bert = Bert()


def edit_knowledge(model, kn_bag, ori_id, tgt_id, lambda_list_1, lambda_list_2):
    ori_pred_emb = model.bert.embeddings.word_embeddings.weight[ori_id]
    tgt_emb = model.bert.embeddings.word_embeddings.weight[tgt_id]
    for i, (layer, pos) in enumerate(kn_bag):
        model.bert.encoder.layer[layer].output.dense.weight[:, pos] -= (  # culprit: GG102
            ori_pred_emb * lambda_list_1[i])
        model.bert.encoder.layer[layer].output.dense.weight[:, pos] += (  # culprit: GG102
            tgt_emb * lambda_list_2[i])


torch.manual_seed(0)
model = BertForMaskedLM()
kn_bag = [(0, 3), (2, 7)]
edit_knowledge(model, kn_bag, ori_id=5, tgt_id=9,
               lambda_list_1=[1.0, 1.0], lambda_list_2=[2.0, 2.0])
