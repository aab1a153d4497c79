"""ptsemseg PSPNet as fixed upstream: the shared Dropout2d is out of place, so neither the
auxiliary branch nor the main one overwrites a ReLU output saved for backward.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class conv2DBatchNormRelu(nn.Module):
    def __init__(self, in_channels, n_filters, k_size, stride, padding, bias=True):
        super().__init__()
        conv_mod = nn.Conv2d(in_channels, n_filters, k_size, stride=stride, padding=padding, bias=bias)
        self.cbr_unit = nn.Sequential(conv_mod, nn.BatchNorm2d(n_filters), nn.ReLU(inplace=True))

    def forward(self, inputs):
        return self.cbr_unit(inputs)


class pspnet(nn.Module):
    def __init__(self, n_classes=3):
        super().__init__()
        self.convbnrelu1_1 = conv2DBatchNormRelu(3, 8, 3, 2, 1, bias=False)
        self.res_block4 = conv2DBatchNormRelu(8, 16, 3, 1, 1, bias=False)
        self.res_block5 = conv2DBatchNormRelu(16, 16, 3, 1, 1, bias=False)
        self.cbr_final = conv2DBatchNormRelu(16, 8, 3, 1, 1, False)
        self.dropout = nn.Dropout2d(p=0.1, inplace=False)
        self.classification = nn.Conv2d(8, n_classes, 1, 1, 0)
        # Auxiliary layers for training
        self.convbnrelu4_aux = conv2DBatchNormRelu(16, 8, 3, 1, 1, bias=False)
        self.aux_cls = nn.Conv2d(8, n_classes, 1, 1, 0)

    def forward(self, x):
        inp_shape = x.shape[2:]
        x = self.convbnrelu1_1(x)
        x = self.res_block4(x)

        # Auxiliary layers for training
        if self.training:
            x_aux = self.convbnrelu4_aux(x)
            x_aux = self.dropout(x_aux)
            x_aux = self.aux_cls(x_aux)

        x = self.res_block5(x)
        x = self.cbr_final(x)
        x = self.dropout(x)
        x = self.classification(x)
        x = F.interpolate(x, size=inp_shape, mode="bilinear", align_corners=True)
        if self.training:
            return (x, x_aux)
        return x


torch.manual_seed(0)
model = pspnet()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
images, labels = torch.randn(2, 3, 16, 16), torch.randint(0, 3, (2, 16, 16))
model.train()
outputs, outputs_aux = model(images)
aux = F.interpolate(outputs_aux, size=labels.shape[1:], mode="bilinear", align_corners=True)
loss = F.cross_entropy(outputs, labels) + 0.4 * F.cross_entropy(aux, labels)
optimizer.zero_grad()
loss.backward()
optimizer.step()
