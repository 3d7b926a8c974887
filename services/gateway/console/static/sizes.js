// Sizes on disk (topic-sizes, partition-sizes: the brokers' DescribeLogDirs). Without DESCRIBE
// on the cluster the gateway refuses them (403): pages then say "not permitted" where a size
// would be and show the rest as usual.
import { ApiError, call, cluster, enc } from "./api.js";

export const NOT_PERMITTED = "not permitted";

// Bytes in binary units: "0 B", "1.5 KiB", "12.0 MiB"; "–" when unknown.
export function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

export function refused(error) {
  return error instanceof ApiError && error.refused;
}

// The sizes of ``names`` (one page of topics): a Map name -> topic size; throws ApiError.
export async function topicSizes(names) {
  if (names.length === 0) return new Map();
  const query = names.map((n) => `topic_name=${enc(n)}`).join("&");
  const answer = await call("GET", `${await cluster()}/topic-sizes?${query}`);
  return new Map(answer.data.map((t) => [t.topic_name, t]));
}
