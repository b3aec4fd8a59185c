// HTTP calls to the server that served this page. API keys go as `Authorization: Bearer KEY`
// on HTTP and as `?token=KEY` on the WebSocket (browsers cannot set headers there).

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error?.code ?? null;
  }
}

export async function getJson(path, key) {
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  const response = await fetch(path, { headers, cache: "no-store" });
  let body = null;
  try {
    body = await response.json();
  } catch {
    // a non-JSON answer (a proxy's error page): the status says enough
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

export function streamUrl(key) {
  const url = new URL("/v1/tts/stream", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  if (key) url.searchParams.set("token", key);
  return url.href;
}
