# Reads the output of `go test ./export -bench 'Interleaved$'` and prints each
# format's write/read MB/s and rows/s and file size, with ratios to JSONL. The
# benchmark runs every format inside each iteration, so the ratios compare
# formats under the same machine load.
/^BenchmarkInterleaved/ {
	found = 1
	for (i = 3; i < NF; i += 2) {
		unit = $(i+1)
		if (unit == "ns/op") continue
		fmt = unit; sub(/-(write|read|file).*$/, "", fmt)
		metric = substr(unit, length(fmt) + 2)
		v[fmt, metric] = $i
		if (!(fmt in seen)) { seen[fmt] = 1; order[++n] = fmt }
	}
}
END {
	if (!found || !(("jsonl", "write-MB/s") in v)) { print "bench-export: no BenchmarkInterleaved line with a JSONL baseline"; exit 1 }
	printf "\nexport: formats interleaved in one run (MB/s of the data set's JSONL size; ratio = format / jsonl)\n"
	printf "%-10s %11s %9s %8s %11s %9s %8s %11s %7s\n", "format", "write MB/s", "rows/s", "ratio", "read MB/s", "rows/s", "ratio", "file B/row", "ratio"
	for (k = 1; k <= n; k++) {
		f = order[k]
		printf "%-10s %11.2f %9.0f %7.2fx %11.2f %9.0f %7.2fx %11.0f %6.2fx\n", f,
			v[f, "write-MB/s"], v[f, "write-rows/s"], v[f, "write-MB/s"] / v["jsonl", "write-MB/s"],
			v[f, "read-MB/s"], v[f, "read-rows/s"], v[f, "read-MB/s"] / v["jsonl", "read-MB/s"],
			v[f, "file-B/row"], v[f, "file-B/row"] / v["jsonl", "file-B/row"]
	}
}
