#!/bin/bash
# An example Slurm batch script: lockstep across 4 nodes, one process per
# node, the node's CPU cores shared by 2 replicas in each (8 replicas in all).
# Submit with: sbatch apps/lockstep-sbatch.sh
#
# Every node must see the same lockstep binary and the data set at the same
# path (a shared file system, or copies at identical paths); the checkpoint
# folder need only exist on the node of rank 0, which alone writes to it.
#SBATCH --job-name=lockstep
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=32
#SBATCH --time=04:00:00
#SBATCH --output=lockstep-%j.out

set -euo pipefail
LOCKSTEP=${LOCKSTEP:-$HOME/lockstep/build/lockstep}
DATA=${DATA:-/shared/datasets/fashion-mnist}

# srun starts the processes and gives each its rank through PMIx; Open MPI
# picks the fastest transport between nodes it finds (InfiniBand, else TCP).
# A rank that dies ends the job; rank 0's last checkpoint stays usable:
#   sbatch --export=ALL,RESUME=1 apps/lockstep-sbatch.sh
resume=()
if [ -n "${RESUME:-}" ] && [ -f lockstep.safetensors ]; then resume=(--resume lockstep.safetensors); fi
srun --mpi=pmix "$LOCKSTEP" train --data "$DATA" --devices cpu --replicas 2 \
  --model resnet20 --batch 512 --epochs 30 --checkpoint lockstep.safetensors --metrics lockstep.jsonl "${resume[@]}"
