# Reads `go test -bench 'Benchmark(Write|Read)$'` output of ./export and prints
# each format's MB/s, rows/s and file size next to JSONL's, as ratios measured
# in the same run (absolute numbers on a shared machine mean little).
/^Benchmark(Write|Read)\// {
	split($1, name, "/")
	op = substr(name[1], 10)
	fmt = name[2]; sub(/-[0-9]+$/, "", fmt)
	for (i = 2; i < NF; i++) {
		if ($(i+1) == "MB/s") mbs[op, fmt] = $i
		if ($(i+1) == "rows/s") rows[op, fmt] = $i
		if ($(i+1) == "file-B/row") size[fmt] = $i
	}
	if (!(fmt in seen)) { seen[fmt] = 1; order[++n] = fmt }
}
END {
	if (!(("Write", "jsonl") in mbs)) { print "bench-export: no JSONL baseline in the output"; exit 1 }
	printf "\nexport: JSONL vs Parquet, one run (MB/s of the data set's JSONL size; ratio = format / jsonl)\n"
	printf "%-10s %11s %11s %9s %11s %11s %9s %12s %7s\n", "format", "write MB/s", "rows/s", "ratio", "read MB/s", "rows/s", "ratio", "file B/row", "ratio"
	for (k = 1; k <= n; k++) {
		f = order[k]
		printf "%-10s %11.2f %11.0f %8.2fx %11.2f %11.0f %8.2fx %12.0f %6.2fx\n", f,
			mbs["Write", f], rows["Write", f], mbs["Write", f] / mbs["Write", "jsonl"],
			mbs["Read", f], rows["Read", f], mbs["Read", f] / mbs["Read", "jsonl"],
			size[f], size[f] / size["jsonl"]
	}
}
