"""A stand-in for KubeRay's light-weight submitter (`/submitter` of quay.io/kuberay/submitter): submit the
entrypoint (the arguments after the flags) to the dashboard at RAY_DASHBOARD_ADDRESS with the submission id
RAY_JOB_SUBMISSION_ID, then follow the job's logs until the dashboard closes the stream (the job ended).
Like the original, a submission id already taken means "submitted before: just follow it", and any other
failure exits 1."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

import aiohttp

SUBMIT_TIMEOUT_SECONDS = 10.0


def submission_request(argv: list[str], submission_id: str) -> dict[str, Any]:
    """The Jobs API request the original builds from its flags and arguments."""
    parser = argparse.ArgumentParser(prog="/submitter")
    parser.add_argument("--runtime-env-json", default="")
    parser.add_argument("--metadata-json", default="")
    parser.add_argument("--entrypoint-resources", default="")
    parser.add_argument("--entrypoint-num-cpus", type=float, default=0.0)
    parser.add_argument("--entrypoint-num-gpus", type=float, default=0.0)
    parser.add_argument("entrypoint", nargs=argparse.REMAINDER)
    flags = parser.parse_args(argv)
    words = flags.entrypoint[1:] if flags.entrypoint[:1] == ["--"] else flags.entrypoint
    request: dict[str, Any] = {
        "entrypoint": " ".join(words),
        "submission_id": submission_id,
        "entrypoint_num_cpus": flags.entrypoint_num_cpus,
        "entrypoint_num_gpus": flags.entrypoint_num_gpus,
    }
    for key, text in (
        ("runtime_env", flags.runtime_env_json),
        ("metadata", flags.metadata_json),
        ("entrypoint_resources", flags.entrypoint_resources),
    ):
        if text:
            request[key] = json.loads(text)
    return request


async def submit_and_follow(address: str, request: dict[str, Any]) -> int:
    base = address if address.startswith("http") else f"http://{address}"
    submission_id = request["submission_id"]
    async with aiohttp.ClientSession() as session:
        async with session.post(
            f"{base}/api/jobs/", json=request, timeout=aiohttp.ClientTimeout(total=SUBMIT_TIMEOUT_SECONDS)
        ) as response:
            text = await response.text()
            if response.status == 200:
                print(f"SUCC -- Job '{submission_id}' submitted successfully", flush=True)
            elif "Please use a different submission_id" in text:
                print(f"INFO -- Job '{submission_id}' has already been submitted, tailing logs.", flush=True)
            else:
                print(f"ERROR -- {response.status}: {text}", file=sys.stderr, flush=True)
                return 1
        print("INFO -- Tailing logs until the job finishes:", flush=True)
        async with session.ws_connect(f"{base}/api/jobs/{submission_id}/logs/tail") as socket:
            async for message in socket:
                if message.type == aiohttp.WSMsgType.TEXT:
                    sys.stdout.write(message.data)
                    sys.stdout.flush()
                elif message.type == aiohttp.WSMsgType.ERROR:
                    return 1
    print(f"SUCC -- Job '{submission_id}' succeeded", flush=True)
    return 0


def main(argv: list[str]) -> int:
    address = os.environ.get("RAY_DASHBOARD_ADDRESS", "")
    submission_id = os.environ.get("RAY_JOB_SUBMISSION_ID", "")
    for name, value in (("RAY_DASHBOARD_ADDRESS", address), ("RAY_JOB_SUBMISSION_ID", submission_id)):
        if not value:
            print(f"ERROR -- missing {name} in environment variables", file=sys.stderr)
            return 1
    try:
        return asyncio.run(submit_and_follow(address, submission_request(argv, submission_id)))
    except (aiohttp.ClientError, TimeoutError, ValueError) as error:
        print(f"ERROR -- {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
