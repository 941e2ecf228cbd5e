"""Credentials never leak: a secret given in the config's ``storage_options`` or in the environment
appears in no byte of the run folder (every object, Parquet metadata included) and in none of the
CLI's output (stdout and stderr, which carry the driver's and the workers' logs)."""
from __future__ import annotations

import json

import yaml

from support.pipeline_corpus import config, write_records
from support.storage_servers import AWS_VARS, cli, download_tree, moto_endpoint, s3_bucket, s3_fs, upload_tree  # noqa: F401

CONFIG_SECRET = "cfg-secret-7d1c0ffee5ca1ab1e"
CONFIG_KEY_ID = "AKIACONFIGKEYROUGE01"
ENV_SECRET = "env-secret-42deadbeef42cafe"


def _leaks(blobs: dict[str, bytes], secrets) -> list[str]:
    return [f"{name}: {s}" for name, b in blobs.items() for s in secrets if s.encode() in b]


def test_secrets_from_config_and_environment_appear_nowhere(moto_endpoint, s3_bucket, tmp_path):
    local = tmp_path / "corpus"
    write_records(local, 12)
    fs = s3_fs(moto_endpoint)
    upload_tree(fs, local, f"{s3_bucket}/corpus")
    out = f"s3://{s3_bucket}/runs/secret"
    so = {"key": CONFIG_KEY_ID, "secret": CONFIG_SECRET, "client_kwargs": {"endpoint_url": moto_endpoint}}
    d = config({"layout": "records", "paths": f"s3://{s3_bucket}/corpus/shard-*"}, out,
               execution={"mode": "local"}, storage_options=so)
    cfg = tmp_path / "secret.yaml"
    cfg.write_text(yaml.safe_dump(d))
    assert CONFIG_SECRET in cfg.read_text()          # the secret really is in the config
    # The config's storage_options carry endpoint and credentials; the environment holds another
    # secret (a decoy that every process inherits) and no endpoint.
    env = {"AWS_ACCESS_KEY_ID": "AKIAENVKEYROUGE00001", "AWS_SECRET_ACCESS_KEY": ENV_SECRET,
           "AWS_DEFAULT_REGION": "us-east-1"}
    r = cli("score", "--config", str(cfg), "--workers", "1", env=env, drop_env=AWS_VARS)
    assert r.returncode == 0, r.stderr
    files = download_tree(fs, out)
    assert "_SUCCESS" in files and "_run.json" in files and any(k.endswith(".parquet") for k in files)
    secrets = (CONFIG_SECRET, ENV_SECRET, CONFIG_KEY_ID)
    assert _leaks(files, secrets) == []
    assert _leaks({"stdout": r.stdout.encode(), "stderr": r.stderr.encode()}, secrets) == []
    assert b'"secret": "<redacted>"' in files["_run.json"] and b'"key": "<redacted>"' in files["_run.json"]
    # the check itself would see a leak
    assert _leaks({"x": b"..." + CONFIG_SECRET.encode() + b"..."}, secrets)

    # a failing run (another config, same folder: refused) does not print them either
    bad = cli("score", "--config", str(cfg), "--workers", "1", "--sync", "--set", "stats.seed=4",
              env=env, drop_env=AWS_VARS)
    assert bad.returncode == 4
    assert _leaks({"stdout": bad.stdout.encode(), "stderr": bad.stderr.encode()}, secrets) == []


# ------------------------------------------------------------------ every credential-bearing option
# The credential-bearing options of s3fs (S3FileSystem's signature: key, secret, token, username,
# password, client_kwargs, config_kwargs, s3_additional_kwargs, session/profile), gcsfs (token: a
# service-account dict, a path, an OAuth token; secure_serialize, access), adlfs (account_key,
# sas_token, connection_string, credential, client_id/client_secret/tenant_id), and generic HTTP
# ones (headers, auth, passwd, sig), nested in dicts and lists.  Each value is unique, so a leak of
# any of them is found.
def _credential_options() -> tuple[dict, list[str]]:
    secrets = []

    def s(name):
        v = f"S3CR3T-{name}-{len(secrets):02d}-9f3a7c"
        secrets.append(v)
        return v

    so = {
        # s3fs
        "key": s("key"), "secret": s("secret"), "token": s("token"), "session_token": s("session_token"),
        "username": s("username"), "password": s("password"), "profile": s("profile"),
        "client_kwargs": {"aws_access_key_id": s("ck_id"), "aws_secret_access_key": s("ck_secret"),
                          "aws_session_token": s("ck_token"),
                          "endpoint_url": f"http://minio:{s('ep_pw')}@127.0.0.1:9/?X-Amz-Signature={s('ep_sig')}",
                          "region_name": "eu-west-1"},
        "config_kwargs": {"user_agent_extra": s("ua"), "proxies": {"https": f"http://u:{s('proxy_pw')}@proxy:3128"}},
        "s3_additional_kwargs": {"SSECustomerKey": s("ssec"), "SSEKMSKeyId": s("kms")},
        # gcsfs
        "gcs_token": {"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\n"
                      + s("private_key") + "\n-----END PRIVATE KEY-----\n", "client_secret": s("gcs_client_secret"),
                      "refresh_token": s("refresh_token"), "private_key_id": s("private_key_id")},
        "token_path": f"/home/u/{s('token_file')}.json", "access": s("access"),
        # adlfs
        "account_name": "myaccount", "account_key": s("account_key"), "sas_token": f"sv=2022&sig={s('sas_sig')}",
        "connection_string": f"DefaultEndpointsProtocol=https;AccountName=myaccount;AccountKey={s('conn_key')};"
                             "EndpointSuffix=core.windows.net",
        "credential": s("credential"), "client_id": s("client_id"), "client_secret": s("client_secret"),
        "tenant_id": s("tenant_id"),
        # HTTP-style and odd names
        "headers": {"Authorization": f"Bearer {s('bearer')}", "x-api-key": s("api_key")},
        "auth": [s("auth_user"), s("auth_pw")], "passwd": s("passwd"), "sig": s("sig"), "sas": s("sas"),
        "nested": [{"deep": {"deeper": s("deeper")}}, s("in_list")],
        "anon": False, "use_ssl": True, "requester_pays": False,
    }
    return so, secrets


def test_redact_options_keeps_keys_and_only_harmless_values():
    from pipeline.redaction import REDACTED, redact_options

    so, secrets = _credential_options()
    rec = redact_options(so)
    text = json.dumps(rec)
    assert [x for x in secrets if x in text] == []
    assert set(rec) == set(so)                                       # every key is recorded
    assert set(rec["headers"]) == {"Authorization", "x-api-key"} and rec["headers"]["Authorization"] == REDACTED
    assert rec["client_kwargs"]["region_name"] == "eu-west-1"
    assert rec["client_kwargs"]["endpoint_url"] == f"http://{REDACTED}@127.0.0.1:9/?X-Amz-Signature={REDACTED}"
    assert (rec["anon"], rec["use_ssl"], rec["account_name"]) == (False, True, "myaccount")
    assert rec["connection_string"] == REDACTED and rec["auth"] == REDACTED and rec["nested"] == REDACTED
    # a harmless name does not let a structured value through
    assert redact_options({"anon": {"x": "S3CR3T"}, "region_name": ["S3CR3T"]}) == \
        {"anon": {"x": REDACTED}, "region_name": REDACTED}


def test_redact_url_and_text():
    from pipeline.redaction import REDACTED, Redactor, redact_url

    assert redact_url("s3://AKIA:pw-1234@bucket/x") == f"s3://{REDACTED}@bucket/x"
    assert redact_url("abfs://container@account.dfs.core.windows.net/x") == \
        "abfs://container@account.dfs.core.windows.net/x"          # no password: a container name
    assert redact_url("az://c/x.jsonl?sv=2022-11-02&sp=r&sig=abc%2Fdef") == \
        f"az://c/x.jsonl?sv={REDACTED}&sp={REDACTED}&sig={REDACTED}"
    assert redact_url("/data/shard-?.jsonl") == "/data/shard-?.jsonl"   # a glob's ? is not a query
    r = Redactor(["my-very-secret"])
    msg = ("failed: my-very-secret at s3://u:pw9999@b/k?sig=zzzz9999 "
           "(AccountKey=kkkk9999;) {'Authorization': 'Bearer tttt9999'}")
    out = r.text(msg)
    for leak in ("my-very-secret", "pw9999", "zzzz9999", "kkkk9999", "tttt9999"):
        assert leak not in out, out
    assert r.text("rows 10, quarantined 0") == "rows 10, quarantined 0"


def test_userinfo_without_a_password_is_redacted_too():
    """https://TOKEN@host, s3://KEY@bucket, https://user@host: any userinfo may be a credential."""
    from pipeline.redaction import REDACTED, Redactor, redact_record, redact_url

    for url, want in (("https://ghp_T0KEN1234@git.example/r.jsonl", f"https://{REDACTED}@git.example/r.jsonl"),
                      ("s3://AKIAKEY5678@bucket/x.jsonl", f"s3://{REDACTED}@bucket/x.jsonl"),
                      ("https://alice@host/x", f"https://{REDACTED}@host/x"),
                      ("abfss://container@acct.dfs.core.windows.net/x", "abfss://container@acct.dfs.core.windows.net/x")):
        assert redact_url(url) == want
    rec = redact_record({"input": {"paths": ["https://ghp_T0KEN1234@git.example/r.jsonl"]},
                         "output": {"url": "s3://AKIAKEY5678@bucket/run"}})
    assert "T0KEN1234" not in json.dumps(rec) and "AKIAKEY5678" not in json.dumps(rec)
    r = Redactor().add_config({"input": {"paths": "s3://AKIAKEY5678@bucket/x.jsonl"}})
    out = r.text("cannot open AKIAKEY5678@bucket/x.jsonl: see https://ghp_T0KEN1234@git.example/r")
    assert "AKIAKEY5678" not in out and "T0KEN1234" not in out, out


def test_a_token_only_url_is_redacted_in_printed_output_and_errors(tmp_path):
    corpus = write_records(tmp_path / "corpus", 4)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(config({"layout": "records", "paths": corpus}, tmp_path / "run")))
    token = "S3CR3T-token-only-9c9c"
    url = f"memory://{token}@nowhere/x.jsonl"
    missing = cli("score", "--config", str(cfg), "--sync", "--set", f"input.paths={url}")
    printed = cli("score", "--config", str(cfg), "--print-config", "--set", f"input.paths={url}")
    assert missing.returncode == 2 and "memory://" in missing.stderr, missing.stderr
    assert printed.returncode == 0 and "nowhere/x.jsonl" in printed.stdout, printed.stderr
    outputs = {f"{n}.{k}": getattr(r, k).encode() for n, r in (("missing", missing), ("printed", printed))
               for k in ("stdout", "stderr")}
    assert _leaks(outputs, [token]) == []


def test_every_credential_option_appears_in_no_byte_of_the_run_or_its_output(tmp_path):
    """A local run accepts any storage option (fsspec's local filesystem ignores them), so every
    credential-bearing option goes through a real run, a refused rerun and a failing input."""
    so, secrets = _credential_options()
    corpus = write_records(tmp_path / "corpus", 12)
    out = tmp_path / "run"
    d = config({"layout": "records", "paths": corpus}, out, storage_options=so)
    d["input"]["storage_options"] = {"secret": (extra := "S3CR3T-input-level-77aa11"),
                                     "headers": {"Authorization": "Basic S3CR3T-basic-88bb22"}}
    secrets += [extra, "S3CR3T-basic-88bb22"]
    cfg = tmp_path / "cred.yaml"
    cfg.write_text(yaml.safe_dump(d))
    assert all(x in cfg.read_text() for x in secrets if "\n" not in x)

    ok = cli("score", "--config", str(cfg), "--sync")
    assert ok.returncode == 0, ok.stderr
    files = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert "_SUCCESS" in files and "_run.json" in files and "_summary.json" in files
    assert _leaks(files, secrets) == []
    assert _leaks({"stdout": ok.stdout.encode(), "stderr": ok.stderr.encode()}, secrets) == []
    rec = json.loads(files["_run.json"])["config"]
    assert set(rec["storage_options"]) == set(so) and rec["input"]["storage_options"]["headers"] == \
        {"Authorization": "<redacted>"}

    # refused (other settings), then an input URL with a password and a SAS-style query
    bad = cli("score", "--config", str(cfg), "--sync", "--set", "stats.seed=4")
    assert bad.returncode == 4
    url_pw, url_sig = "S3CR3T-url-password-5e5e", "S3CR3T-url-sig-6f6f"
    missing = cli("score", "--config", str(cfg), "--sync", "--output", str(tmp_path / "run2"),
                  "--set", f"input.paths=memory://user:{url_pw}@nowhere/x.jsonl?sv=1&sig={url_sig}")
    assert missing.returncode == 2 and "memory://" in missing.stderr, missing.stderr
    printed = cli("score", "--config", str(cfg), "--print-config")
    assert printed.returncode == 0 and "connection_string" in printed.stdout, printed.stderr
    outputs = {f"{n}.{k}": getattr(r, k).encode() for n, r in (("bad", bad), ("missing", missing),
                                                                 ("print-config", printed))
               for k in ("stdout", "stderr")}
    assert _leaks(outputs, secrets + [url_pw, url_sig]) == []


def test_the_objects_sent_to_workers_do_not_show_credentials():
    """Dask's workers log a failed task's arguments (their repr) on their own stderr, which the
    command's redactor does not see: the input spec and the task context hide their options."""
    from pipeline import job
    from pipeline.io.input_spec import InputSpec

    so, secrets = _credential_options()
    spec = InputSpec.from_config({"layout": "records", "paths": "/data/x.jsonl", "storage_options": so})
    ctx = job.UnitContext(run_url="/r", scoring=job.ScoringSettings(("rouge1",)), seed=1, n_boot=0,
                          metadata={}, storage_options=so)
    assert spec.storage_options == so
    assert _leaks({"spec": repr(spec).encode(), "ctx": repr(ctx).encode()}, secrets) == []


def test_hidden_options_work_as_options_and_show_only_their_keys():
    import pickle

    from pipeline.redaction import HiddenOptions

    so, secrets = _credential_options()
    h = HiddenOptions(so)
    assert dict(h) == so and pickle.loads(pickle.dumps(h)) == so
    assert _leaks({"repr": repr(h).encode(), "str": str(h).encode(), "in a tuple": repr((1, h)).encode()},
                  secrets) == []
    assert "connection_string" in repr(h)
