-- Argo CD health check of webhook-operator's Welcome, Memcached, DeployObject and AdmissionPolicy,
-- for resource.customizations.health.<group>_<kind> in argocd-cm (docs/operations.md#argo-cd).
-- It reads the conditions as kstatus does (docs/operations.md#conditions): Progressing until the
-- operator has reported on the object's generation, Degraded while Stalled is True, Progressing
-- while Reconciling is True or Ready is not True, Healthy once Ready is True. It calls Lua's base
-- library only, all that Argo CD opens for a health check.
local hs = { status = "Progressing", message = "Waiting for the operator to report on generation " .. tostring(obj.metadata.generation) }
local status = obj.status or {}
if status.observedGeneration == nil or status.observedGeneration ~= obj.metadata.generation then
  return hs
end

local conditions = {}
for _, c in ipairs(status.conditions or {}) do
  conditions[c.type] = c
end
local function describe(c)
  if c.message == nil or c.message == "" then
    return c.reason
  end
  return c.reason .. ": " .. c.message
end

local stalled, reconciling, ready = conditions["Stalled"], conditions["Reconciling"], conditions["Ready"]
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = describe(stalled)
elseif reconciling ~= nil and reconciling.status == "True" then
  hs.message = describe(reconciling)
elseif ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = describe(ready)
elseif ready ~= nil then
  hs.message = describe(ready)
else
  hs.message = "Waiting for the operator to report Ready"
end
return hs
