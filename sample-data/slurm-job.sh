#!/bin/sh
# sample-data/slurm-job.sh - chunkctl under MPI in a Slurm batch job.
#
#   sbatch sample-data/slurm-job.sh pipeline.json
#
# Every rank runs the same command; each writes its share of the outputs'
# chunks beside the targets, and rank 0 assembles and commits them (see
# MPI in chunkctl(1)).  The outputs' directories must be on a file system
# every node sees.  --memory bounds each rank; --threads the cores each
# rank uses (here: the cores Slurm gives a task).
#SBATCH --job-name=chunkctl
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=8
#SBATCH --mem-per-cpu=2G
#SBATCH --time=01:00:00
set -eu
pipeline=${1:-pipeline.json}
# Preview the split before spending the allocation.
chunkctl plan --ranks "$SLURM_NTASKS" "$pipeline"
# Open MPI's mpirun reads the allocation from Slurm; -q keeps its banners
# off stderr, so a failure reads as chunkctl's one line.
mpirun -q chunkctl run --threads "${SLURM_CPUS_PER_TASK:-1}" \
    --memory 12G "$pipeline"
