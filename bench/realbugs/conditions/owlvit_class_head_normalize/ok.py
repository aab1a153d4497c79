"""OwlViTClassPredictionHead as fixed in the pull request: the embeddings are normalized
out of place, so the tensors torch.linalg.norm saved stay as they were.
"""
from typing import Optional

import torch
from torch import nn


class OwlViTClassPredictionHead(nn.Module):
    def __init__(self, out_dim=6, query_dim=6):
        super().__init__()
        self.query_dim = query_dim
        self.dense0 = nn.Linear(out_dim, query_dim)
        self.logit_shift = nn.Linear(out_dim, 1)
        self.logit_scale = nn.Linear(out_dim, 1)
        self.elu = nn.ELU()

    def forward(self, image_embeds: torch.FloatTensor, query_embeds: Optional[torch.FloatTensor],
                query_mask: Optional[torch.Tensor]):
        image_class_embeds = self.dense0(image_embeds)
        if query_embeds is None:
            batch_size, num_patches = image_class_embeds.shape[:2]
            pred_logits = torch.zeros((batch_size, num_patches, self.query_dim))
            return (pred_logits, image_class_embeds)

        # Normalize image and text features
        image_class_embeds = image_class_embeds / (torch.linalg.norm(image_class_embeds, dim=-1, keepdim=True) + 1e-6)
        query_embeds = query_embeds / (torch.linalg.norm(query_embeds, dim=-1, keepdim=True) + 1e-6)

        # Get class predictions
        pred_logits = torch.einsum("...pd,...qd->...pq", image_class_embeds, query_embeds)

        # Apply a learnable shift and scale to logits
        logit_shift = self.logit_shift(image_embeds)
        logit_scale = self.elu(self.logit_scale(image_embeds)) + 1
        pred_logits = (pred_logits + logit_shift) * logit_scale

        if query_mask is not None:
            if query_mask.ndim > 1:
                query_mask = torch.unsqueeze(query_mask, dim=-2)
            pred_logits = torch.where(query_mask == 0, -1e6, pred_logits)
        return (pred_logits, image_class_embeds)


torch.manual_seed(0)
head = OwlViTClassPredictionHead()
text_projection = nn.Linear(5, 6)
image_embeds = torch.randn(2, 4, 6)
query_embeds = text_projection(torch.randn(2, 3, 5))
pred_logits, _ = head(image_embeds, query_embeds, torch.ones(2, 3))
pred_logits.logsumexp(-1).mean().backward()
