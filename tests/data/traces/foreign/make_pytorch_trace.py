# Generates pytorch_cpu_small.json: a PyTorch-profiler Chrome trace of a tiny CNN on the CPU, the
# foreign trace the import tests load. Run once with torch installed; the output is committed.
import os
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4)).eval()
x = torch.randn(1, 3, 16, 16)
with torch.no_grad():
    model(x)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                profile_memory=True, with_flops=True) as prof:
        for _ in range(2):
            model(x)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch_cpu_small.json")
prof.export_chrome_trace(out)
print(out, os.path.getsize(out))
