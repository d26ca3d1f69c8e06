// Validates Kubernetes manifests offline against the API schemas shipped by
// the kubernetes-models package (types, required fields, enums, formats).
//
//   node validate.mjs ../../kubernetes/*.yaml
//
// Every document must have an apiVersion and kind the package knows. Before
// the files, a known-bad document is checked, so that a validator that
// accepts everything fails here instead of passing silently. Exits 1 on any
// problem.
import { readFile } from "node:fs/promises";
import { parseAllDocuments } from "yaml";

async function validate(doc) {
  const { apiVersion, kind } = doc ?? {};
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    throw new Error("no apiVersion or kind");
  }
  let mod;
  try {
    mod = await import(`kubernetes-models/${apiVersion}`);
  } catch {
    throw new Error(`unknown apiVersion ${apiVersion}`);
  }
  const Model = mod[kind];
  if (typeof Model !== "function") {
    throw new Error(`unknown kind ${kind} in ${apiVersion}`);
  }
  new Model(doc).validate();
}

const canary = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: "canary" },
  spec: {
    selector: { matchLabels: { app: "canary" } },
    template: { spec: { containers: [{ name: "c", image: "i", ports: [{ containerPort: "http" }] }] } },
  },
};
try {
  await validate(canary);
  console.error("the validator accepted a Deployment whose containerPort is a string");
  process.exit(1);
} catch {
  // As it should.
}

let failed = 0;
let checked = 0;
for (const file of process.argv.slice(2)) {
  const docs = parseAllDocuments(await readFile(file, "utf8"));
  for (const d of docs) {
    if (d.errors.length > 0) {
      console.error(`${file}: YAML: ${d.errors[0].message}`);
      failed++;
      continue;
    }
    const doc = d.toJS();
    if (doc === null) continue;
    const what = `${file}: ${doc.kind}/${doc.metadata?.name}`;
    try {
      await validate(doc);
      checked++;
      console.log(`ok ${what}`);
    } catch (e) {
      console.error(`${what}: ${e.message}`);
      failed++;
    }
  }
}
if (checked === 0 && failed === 0) {
  console.error("no manifests given");
  process.exit(1);
}
console.log(`${checked} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
