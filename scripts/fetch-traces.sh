#!/usr/bin/env bash
# Downloads larger public LLM-serving traces into workloads/traces/large/ (ignored by git).
# The small ones ship in workloads/traces/; these are too large to commit. Each file's source
# and licence is printed as it is fetched; a download that fails is reported and skipped, so
# the script can be rerun where the network allows.
#   scripts/fetch-traces.sh [NAME...]      NAME: azure-2024-code, azure-2024-conv,
#                                          mooncake-conversation, mooncake-toolagent,
#                                          mooncake-synthetic (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
dest=workloads/traces/large
mkdir -p "$dest"

azure=https://azurepublicdatasettraces.blob.core.windows.net/azurellminfererencetrace
mooncake=https://raw.githubusercontent.com/kvcache-ai/Mooncake/main/FAST25-release/traces
# name | URL | file | format for --trace-format | licence and source
catalogue=(
  "azure-2024-code|$azure/AzureLLMInferenceTrace_code_1week.csv|azure_llm_inference_code_2024_1week.csv|azure|CC-BY 4.0, Azure/AzurePublicDataset (AzureLLMInferenceDataset2024.md)"
  "azure-2024-conv|$azure/AzureLLMInferenceTrace_conv_1week.csv|azure_llm_inference_conv_2024_1week.csv|azure|CC-BY 4.0, Azure/AzurePublicDataset (AzureLLMInferenceDataset2024.md)"
  "mooncake-conversation|$mooncake/conversation_trace.jsonl|mooncake_conversation_trace.jsonl|mooncake|Apache-2.0, kvcache-ai/Mooncake (FAST25-release/traces)"
  "mooncake-toolagent|$mooncake/toolagent_trace.jsonl|mooncake_toolagent_trace.jsonl|mooncake|Apache-2.0, kvcache-ai/Mooncake (FAST25-release/traces)"
  "mooncake-synthetic|$mooncake/synthetic_trace.jsonl|mooncake_synthetic_trace.jsonl|mooncake|Apache-2.0, kvcache-ai/Mooncake (FAST25-release/traces)"
)
want=("$@")
wanted() { [ ${#want[@]} -eq 0 ] && return 0; for w in "${want[@]}"; do [ "$w" = "$1" ] && return 0; done; return 1; }

command -v curl >/dev/null || { echo "fetch-traces: needs curl" >&2; exit 2; }
failed=0
for entry in "${catalogue[@]}"; do
  IFS='|' read -r name url file format licence <<<"$entry"
  wanted "$name" || continue
  if [ -s "$dest/$file" ]; then echo "fetch-traces: $dest/$file is already here"; continue; fi
  echo "fetch-traces: $name ($licence)"
  if curl -fL --retry 2 --connect-timeout 15 --progress-bar -o "$dest/$file.part" "$url"; then
    mv "$dest/$file.part" "$dest/$file"
    echo "fetch-traces:   -> $dest/$file ($(wc -l <"$dest/$file") lines; dspark-sim run --trace $dest/$file, format $format)"
  else
    rm -f "$dest/$file.part"; failed=$((failed + 1))
    echo "fetch-traces:   could not download $url (no network?); skipped" >&2
  fi
done
[ "$failed" -eq 0 ] || { echo "fetch-traces: $failed download(s) failed" >&2; exit 1; }
