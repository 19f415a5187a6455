#!/usr/bin/env bash
# Writes zerodp's man page (roff) to standard output from the executable's own help: the
# commands and every flag as `zerodp COMMAND --help` prints them, so the page never lists a
# flag the program does not have. Usage: scripts/make-man.sh path/to/zerodp VERSION
set -euo pipefail
zerodp=$1
version=$2

# Help text as roff: backslashes and leading dots or quotes escaped, the program's path as its name.
roff() { sed -e 's/\\/\\e/g' -e "s|$zerodp|zerodp|g" -e 's/^\([.'"'"']\)/\\\&\1/'; }

cat <<HEAD
.TH ZERODP 1 "" "zerodp $version" "User Commands"
.SH NAME
zerodp \- ZeRO data parallelism: plan the memory and communication of each stage, train with it and measure it
.SH SYNOPSIS
.B zerodp
.I COMMAND
[\fIOPTIONS\fR]
.SH DESCRIPTION
zerodp plans the memory each GPU holds and the bytes each sends under plain data parallelism and
ZeRO stages 1, 2 and 3 (\fBplan\fR, \fBplot\fR), for a parameter count, a published model or a
Hugging Face config.json, with a DeepSpeed config; and trains a byte-level GPT with stages 0\-3
on ranks that are threads or MPI processes, measuring what every rank holds and sends
(\fBtrain\fR, \fBmeasure\fR, \fBeval\fR, \fBsample\fR, \fBexport\fR).
.PP
Sizes are decimal unless they say otherwise: 1 GB = 10^9 bytes, 1 GiB = 2^30 bytes. Bad input is
one line on standard error naming the flag, with exit status 2; a run that fails exits with 1.
HEAD

echo ".SH COMMANDS"
"$zerodp" --help | awk '/^Subcommands:/ {on = 1; next} on && NF {print $1}' | while read -r command; do
  echo ".SS zerodp $command"
  echo ".nf"
  "$zerodp" "$command" --help | roff
  echo ".fi"
done

cat <<TAIL
.SH EXAMPLES
.nf
zerodp plan \-\-params 1e9 \-\-gpus 8
zerodp plan \-\-model llama\-3\-8b \-\-gpus 8 \-\-gpu a100\-40gb \-\-seq\-len 4096 \-\-micro\-batch 1 \\
            \-\-checkpointing full \-\-attention flash \-\-stage 2
zerodp train \-\-stage 3 \-\-ranks 4 \-\-steps 300
zerodp measure \-\-all\-stages \-\-ranks 4 \-\-params 10M
.fi
.SH FILES
The documentation and the example DeepSpeed configs are in /usr/share/doc/zerodp (under
/usr/local for a \fBmake install\fR). From Python: \fBimport zerodp\fR (docs/python.md).
.SH SEE ALSO
.BR mpirun (1)
TAIL
