"""Fashion-MNIST on a sparseps parameter server from PyTorch, DGS, 1 server + 4 workers:
PYTHONPATH=build/python torchrun --redirects=1 --tee=1 --nproc_per_node=5 examples/fashion_mnist.py"""
import gzip, numpy as np, sparseps, torch
from torch import nn

def load(split, data="/usr/share/datasets/fashion-mnist"):  # Debian's dataset-fashion-mnist
    read = lambda f, skip: np.frombuffer(gzip.open(f"{data}/{split}-{f}").read()[skip:], np.uint8)
    x = torch.tensor(read("images-idx3-ubyte.gz", 16), dtype=torch.float32).view(-1, 1, 28, 28)
    return (x / 255 - 0.2860) / 0.3530, torch.tensor(read("labels-idx1-ubyte.gz", 8)).long()

def conv(cin, cout, k=3, stride=1):
    return nn.Conv2d(cin, cout, k, stride, k // 2, bias=False)

class Block(nn.Module):  # relu(body(x) + shortcut(x)); a 1x1 projection where shapes change
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(conv(cin, cout, 3, stride), nn.BatchNorm2d(cout), nn.ReLU(),
                                  conv(cout, cout), nn.BatchNorm2d(cout))
        self.shortcut = nn.Sequential() if cin == cout else nn.Sequential(
            conv(cin, cout, 1, stride), nn.BatchNorm2d(cout))
    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))

def small_resnet():  # the C++ driver's small_resnet, layer for layer, and its init
    net = nn.Sequential(conv(1, 16), nn.BatchNorm2d(16), nn.ReLU(), Block(16, 16, 1),
                        Block(16, 32, 2), Block(32, 64, 2), nn.AdaptiveAvgPool2d(1),
                        nn.Flatten(), nn.Linear(64, 10))
    for conv_layer in (m for m in net.modules() if isinstance(m, nn.Conv2d)):
        nn.init.kaiming_normal_(conv_layer.weight, mode="fan_out", nonlinearity="relu")
    return net

def main(epochs=5, batch=64):
    world = sparseps.init()
    torch.manual_seed(1)
    model, (x, y) = small_resnet(), load("train")
    steps = len(x) // world.num_workers // batch  # per worker and epoch
    job = dict(method="dgs", lr=0.1, momentum=0.9, weight_decay=5e-4, density=0.01,
               pushes_per_epoch=steps * world.num_workers, lr_milestones=[3, 4])
    if world.is_server:
        return sparseps.serve(model, **job)  # until every worker has finished
    opt = sparseps.Optimizer(model.parameters(), model=model, **job)
    shard = torch.arange(world.worker_index, len(x), world.num_workers)
    for epoch in range(epochs):
        for idx in shard[torch.randperm(len(shard))][:steps * batch].view(steps, batch):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
        print(f"worker {world.worker_index} epoch {epoch + 1}: loss {loss.item():.3f}", flush=True)
    opt.finish()  # loads the servers' model and averaged BN statistics into `model`
    if world.worker_index == 0:
        (tx, ty), model = load("t10k"), model.eval()
        with torch.no_grad():
            right = sum((model(tx[i:i + 500]).argmax(1) == ty[i:i + 500]).sum() for i in
                        range(0, len(tx), 500))
        print(f"test accuracy of the servers' model: {right.item() / len(tx):.2%}")

if __name__ == "__main__":
    main()
