#!/usr/bin/env bash
# Run 2: the matmul tile's fixed cost and its K chunk's (tile_overhead.py --matmul): 4096 x 4096
# over K = 1024..8192, the stdlib block, PERSIST (d4: direct stores; d3: its own epilogue
# buffer), 256 x 128 tiles; cuBLAS beside them.
source tests/bench/gpu_env.sh
base="TILE=a:wgmma_m64n256k16_f16/w8x1/k4,WSPEC=p1,OVERLAP=1"
python3 tests/bench/tile_overhead.py --lib $B/libemmy.so --matmul 4096,4096 --rows 128 --cols 256 --block 64 \
  --keys 1024,2048,4096,8192 --knobs "$base,STAGE=d4/tma/ring" --knobs "$base,STAGE=d4/tma/ring,PERSIST=1" \
  --knobs "$base,STAGE=d3/tma/ring,PERSIST=1" --knobs "$base,STAGE=d3/tma/ring" --out $OUT/mm_overhead.json
python3 tests/bench/tile_overhead.py --lib $B/libemmy.so --matmul 4096,4096 --rows 256 --cols 128 --block 64 \
  --keys 1024,2048,4096,8192 --knobs "TILE=a:wgmma_m64n128k16_f16/w16x1/k4,WSPEC=p1,OVERLAP=1,STAGE=d4/tma/ring"
