"""AdaCLIP's TextEmbebddingLayer as fixed in the pull request: the prompt embeddings are
normalized out of place, so the norms' saved inputs stay intact.
"""
import torch
from torch import nn
from torch.nn import functional as F


class PromptedTextEncoder(nn.Module):
    def __init__(self, vocab=50, width=8):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, width)
        self.prompt = nn.Parameter(torch.randn(width) * 0.02)
        self.text_projection = nn.Linear(width, width)

    def encode_text(self, tokens):
        return self.text_projection(self.token_embedding(tokens).mean(1) + self.prompt)


class TextEmbebddingLayer(nn.Module):
    def __init__(self, fixed):
        super().__init__()
        self.ensemble_text_features = {}
        self.prompt_state = [['{}', 'flawless {}', 'perfect {}'], ['damaged {}', 'broken {}']]
        self.prompt_templates = ['a bad photo of a {}.', 'a cropped photo of the {}.']
        self.fixed = fixed

    def tokenize(self, texts):
        return torch.tensor([[sum(map(ord, w)) % 50 for w in (t.split() + ['<pad>'] * 8)[:8]] for t in texts])

    def forward(self, model, texts):
        text_feature_list = []
        for text in texts:
            if self.fixed:
                if self.ensemble_text_features.get(text) is None:
                    self.ensemble_text_features[text] = self.encode_text(model, text)
                text_features = self.ensemble_text_features[text]
            else:
                text_features = self.encode_text(model, text)
            text_feature_list.append(text_features)
        return F.normalize(torch.stack(text_feature_list, dim=0), dim=1)

    def encode_text(self, model, text):
        text_features = []
        for i in range(len(self.prompt_state)):
            prompted_state = [state.format(text) for state in self.prompt_state[i]]
            prompted_sentence = [t.format(s) for s in prompted_state for t in self.prompt_templates]
            class_embeddings = model.encode_text(self.tokenize(prompted_sentence))
            class_embeddings = class_embeddings / class_embeddings.norm(dim=-1, keepdim=True)
            class_embedding = class_embeddings.mean(dim=0)
            class_embedding = class_embedding / class_embedding.norm()
            text_features.append(class_embedding)
        return torch.stack(text_features, dim=1)


torch.manual_seed(0)
clip_model = PromptedTextEncoder()
text_layer = TextEmbebddingLayer(fixed=False)
image_features = F.normalize(torch.randn(2, 8), dim=-1)
text_features = text_layer(clip_model, ['bottle', 'cable'])
logits = torch.einsum('bc,bcn->bn', image_features, text_features)
F.cross_entropy(logits / 0.07, torch.tensor([0, 1])).backward()
