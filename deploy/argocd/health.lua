-- Argo CD health of a KAOS resource (kaos.tools Agent, ModelAPI or MCPServer), read from the
-- status its operator writes; scripts/generate puts it in deploy/argocd/kaos-health*.yaml.
--   phase Ready, for the current generation    -> Healthy
--   phase Failed, for the current generation   -> Degraded
--   Pending, Waiting, no status yet, or a status of an older generation -> Progressing
-- The message is always the resource's own status.message.
local health = {status = "Progressing", message = ""}
local status = obj.status
if status == nil then
  return health
end
if status.message ~= nil then
  health.message = status.message
end
if status.observedGeneration == nil or status.observedGeneration ~= obj.metadata.generation then
  return health
end
if status.phase == "Ready" then
  health.status = "Healthy"
elseif status.phase == "Failed" then
  health.status = "Degraded"
end
return health
