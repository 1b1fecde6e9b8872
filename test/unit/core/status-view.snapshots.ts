// Snapshots of the status view for status-view.test.ts (the five plans of status-view-fixtures.ts,
// text and wide at 60 and 160 columns, json). Written by UPDATE_SNAPSHOTS=1 npx mocha test/unit/core/status-view.test.ts.
export const SNAPSHOTS: Record<string, string> = {
  'running text 60': `PatchPlan rolling  InProgress  1/5 nodes  Talos v1.13.2
  SlotsFull: group workers: both slot(s) busy
    next schedule 11:04:10 GMT+1 (10:04:10 UTC, in 4m10s)
  controlPlane [#################] 1/1
  workers      [>>>>>>>>>........] 0/4  running 2  pending 2
  active:
    worker-1  Draining   1m15s  DrainBlockedByPDB: eviction
      blocked by PodDisruptionBudget shop/web (0 disruptions
      allowed)
      Draining gives up 11:03:45 GMT+1 (10:03:45 UTC, in
      3m45s)
    worker-2  Rebooting  20s    node NotReady
      WaitingForReboot: waiting for worker-2 to boot Talos
      v1.13.2
      Rebooting gives up 11:09:40 GMT+1 (10:09:40 UTC, in
      9m40s)`,
  'running text 160': `PatchPlan rolling  InProgress  1/5 nodes  Talos v1.13.2
  SlotsFull: group workers: both slot(s) busy; next schedule 11:04:10 GMT+1 (10:04:10 UTC, in 4m10s)
  controlPlane [##############################] 1/1
  workers      [>>>>>>>>>>>>>>>...............] 0/4  running 2  pending 2
  active:
    worker-1  Draining   1m15s  DrainBlockedByPDB: eviction blocked by PodDisruptionBudget shop/web (0 disruptions allowed)
      Draining gives up 11:03:45 GMT+1 (10:03:45 UTC, in 3m45s)
    worker-2  Rebooting  20s    node NotReady; WaitingForReboot: waiting for worker-2 to boot Talos v1.13.2
      Rebooting gives up 11:09:40 GMT+1 (10:09:40 UTC, in 9m40s)`,
  'running wide 60': `PatchPlan rolling  InProgress  1/5 nodes  Talos v1.13.2
    running for 8m20s
  SlotsFull: group workers: both slot(s) busy
    next schedule 11:04:10 GMT+1 (10:04:10 UTC, in 4m10s)
  controlPlane [########]     1/1  running 0  failed 0  hel…
  workers      [>>>>....]     0/4  running 2  failed 0  hel…
  active:
    worker-1  workers  Draining   1m15s  1m30s  v1.12.4 → v…
      DrainBlockedByPDB: eviction blocked by
      PodDisruptionBudget shop/web (0 disruptions allowed)
      Draining gives up 11:03:45 GMT+1 (10:03:45 UTC, in
      3m45s)
    worker-2  workers  Rebooting  20s    2m30s  v1.12.4 → v…
      node NotReady
      WaitingForReboot: waiting for worker-2 to boot Talos
      v1.13.2
      Rebooting gives up 11:09:40 GMT+1 (10:09:40 UTC, in
      9m40s)`,
  'running wide 160': `PatchPlan rolling  InProgress  1/5 nodes  Talos v1.13.2  running for 8m20s
  SlotsFull: group workers: both slot(s) busy; next schedule 11:04:10 GMT+1 (10:04:10 UTC, in 4m10s)
  controlPlane [##############################]     1/1  running 0  failed 0  held 0  pending 0  skipped 0  slots 0/1
  workers      [>>>>>>>>>>>>>>>...............]     0/4  running 2  failed 0  held 0  pending 2  skipped 0  slots 2/2
  active:
    worker-1  workers  Draining   1m15s  1m30s  v1.12.4 → v1.13.2  v1.35.2  DrainBlockedByPDB: eviction blocked by PodDisruptionBudget shop/web (0 disruptions
      allowed); Draining gives up 11:03:45 GMT+1 (10:03:45 UTC, in 3m45s)
    worker-2  workers  Rebooting  20s    2m30s  v1.12.4 → v1.13.2  v1.35.2  node NotReady; WaitingForReboot: waiting for worker-2 to boot Talos v1.13.2
      Rebooting gives up 11:09:40 GMT+1 (10:09:40 UTC, in 9m40s)`,
  'running json': `{
  "kind": "KangalPatchStatus",
  "version": "v1",
  "time": "2026-12-01T10:00:00.000Z",
  "nodesReadable": true,
  "plans": [
    {
      "name": "rolling",
      "created": "2026-12-01T09:50:00.000Z",
      "phase": "InProgress",
      "finished": false,
      "paused": false,
      "template": false,
      "target": {
        "talosVersion": "v1.13.2"
      },
      "wait": {
        "reason": "SlotsFull",
        "message": "group workers: both slot(s) busy",
        "until": "2026-12-01T10:04:10.000Z",
        "untilWhat": "next schedule"
      },
      "startTime": "2026-12-01T09:51:40.000Z",
      "secondsTotal": 500,
      "counts": {
        "total": 5,
        "completed": 1,
        "running": 2,
        "pending": 2,
        "failed": 0,
        "held": 0,
        "skipped": 0
      },
      "groups": [
        {
          "name": "controlPlane",
          "total": 1,
          "completed": 1,
          "running": 0,
          "pending": 0,
          "failed": 0,
          "held": 0,
          "skipped": 0,
          "concurrency": 1,
          "active": 0
        },
        {
          "name": "workers",
          "total": 4,
          "completed": 0,
          "running": 2,
          "pending": 2,
          "failed": 0,
          "held": 0,
          "skipped": 0,
          "concurrency": 2,
          "active": 2
        }
      ],
      "nodes": [
        {
          "node": "cp-1",
          "job": "rolling-cp-1",
          "group": "controlPlane",
          "phase": "Completed",
          "finished": true,
          "wait": {
            "reason": "Upgraded",
            "message": "node runs Talos v1.13.2"
          },
          "startTime": "2026-12-01T09:51:40.000Z",
          "completionTime": "2026-12-01T09:56:40.000Z",
          "secondsCordoned": 290,
          "secondsTotal": 300,
          "talos": {
            "before": "v1.12.4",
            "after": "v1.13.2",
            "target": "v1.13.2"
          },
          "kubernetes": {
            "before": "v1.35.2",
            "after": "v1.35.2"
          },
          "ready": true
        },
        {
          "node": "worker-1",
          "job": "rolling-worker-1",
          "group": "workers",
          "phase": "Draining",
          "finished": false,
          "wait": {
            "reason": "DrainBlockedByPDB",
            "message": "eviction blocked by PodDisruptionBudget shop/web (0 disruptions allowed)",
            "until": "2026-12-01T10:03:45.000Z",
            "untilWhat": "Draining gives up"
          },
          "blockingPDB": "shop/web",
          "startTime": "2026-12-01T09:58:30.000Z",
          "phaseStartTime": "2026-12-01T09:58:45.000Z",
          "secondsInPhase": 75,
          "secondsCordoned": 75,
          "secondsTotal": 90,
          "talos": {
            "before": "v1.12.4",
            "after": "v1.12.4",
            "target": "v1.13.2"
          },
          "kubernetes": {
            "before": "v1.35.2",
            "after": "v1.35.2"
          },
          "ready": true
        },
        {
          "node": "worker-2",
          "job": "rolling-worker-2",
          "group": "workers",
          "phase": "Rebooting",
          "finished": false,
          "wait": {
            "reason": "WaitingForReboot",
            "message": "waiting for worker-2 to boot Talos v1.13.2",
            "until": "2026-12-01T10:09:40.000Z",
            "untilWhat": "Rebooting gives up"
          },
          "startTime": "2026-12-01T09:57:30.000Z",
          "phaseStartTime": "2026-12-01T09:59:40.000Z",
          "secondsInPhase": 20,
          "secondsCordoned": 140,
          "secondsTotal": 150,
          "talos": {
            "before": "v1.12.4",
            "after": "v1.12.4",
            "target": "v1.13.2"
          },
          "kubernetes": {
            "before": "v1.35.2",
            "after": "v1.35.2"
          },
          "ready": false
        }
      ],
      "held": [],
      "skipped": []
    }
  ]
}
`,
  'paused text 60': `PatchPlan pausing  Paused  2/4 nodes (1 failed)
    Talos v1.13.2
  paused by the failure policy: 1 node(s) failed
    (maxFailures 1): the plan is paused
    resume: kubectl patch patchplan pausing --type merge -p
    '{"spec":{"paused":false}}'
  workers [############xxxxx......] 2/4  failed 1  pending 1
  failed:
    worker-3  UpgradeFailed: Talos refused the upgrade: err…`,
  'paused text 160': `PatchPlan pausing  Paused  2/4 nodes (1 failed)  Talos v1.13.2
  paused by the failure policy: 1 node(s) failed (maxFailures 1): the plan is paused
    resume: kubectl patch patchplan pausing --type merge -p '{"spec":{"paused":false}}'
  workers [###############xxxxxxxx.......] 2/4  failed 1  pending 1
  failed:
    worker-3  UpgradeFailed: Talos refused the upgrade: error validating installer image`,
  'paused wide 60': `PatchPlan pausing  Paused  2/4 nodes (1 failed)
    Talos v1.13.2  running for 6m40s
  paused by the failure policy: 1 node(s) failed
    (maxFailures 1): the plan is paused
    resume: kubectl patch patchplan pausing --type merge -p
    '{"spec":{"paused":false}}'
  workers [####xx..]     2/4  running 0  failed 1  held 0  …
  failed:
    worker-3  UpgradeFailed: Talos refused the upgrade: err…`,
  'paused wide 160': `PatchPlan pausing  Paused  2/4 nodes (1 failed)  Talos v1.13.2  running for 6m40s
  paused by the failure policy: 1 node(s) failed (maxFailures 1): the plan is paused
    resume: kubectl patch patchplan pausing --type merge -p '{"spec":{"paused":false}}'
  workers [###############xxxxxxxx.......]     2/4  running 0  failed 1  held 0  pending 1  skipped 0  slots 0/2
  failed:
    worker-3  UpgradeFailed: Talos refused the upgrade: error validating installer image`,
  'paused json': `{
  "kind": "KangalPatchStatus",
  "version": "v1",
  "time": "2026-12-01T10:00:00.000Z",
  "nodesReadable": true,
  "plans": [
    {
      "name": "pausing",
      "created": "2026-12-01T09:51:40.000Z",
      "phase": "Paused",
      "finished": false,
      "paused": true,
      "pausedBy": "failurePolicy",
      "template": false,
      "target": {
        "talosVersion": "v1.13.2"
      },
      "wait": {
        "reason": "PausedByFailurePolicy",
        "message": "1 node(s) failed (maxFailures 1): the plan is paused"
      },
      "startTime": "2026-12-01T09:53:20.000Z",
      "secondsTotal": 400,
      "counts": {
        "total": 4,
        "completed": 2,
        "running": 0,
        "pending": 1,
        "failed": 1,
        "held": 0,
        "skipped": 0
      },
      "groups": [
        {
          "name": "workers",
          "total": 4,
          "completed": 2,
          "running": 0,
          "pending": 1,
          "failed": 1,
          "held": 0,
          "skipped": 0,
          "concurrency": 2,
          "active": 0
        }
      ],
      "nodes": [
        {
          "node": "worker-1",
          "job": "pausing-worker-1",
          "group": "workers",
          "phase": "Completed",
          "finished": true,
          "wait": {
            "reason": "Upgraded",
            "message": "node runs Talos v1.13.2"
          },
          "startTime": "2026-12-01T09:53:20.000Z",
          "completionTime": "2026-12-01T09:55:50.000Z",
          "secondsCordoned": 140,
          "secondsTotal": 150,
          "talos": {
            "before": "v1.12.4",
            "after": "v1.13.2",
            "target": "v1.13.2"
          },
          "kubernetes": {
            "before": "v1.35.2",
            "after": "v1.35.2"
          },
          "ready": true
        },
        {
          "node": "worker-2",
          "job": "pausing-worker-2",
          "group": "workers",
          "phase": "Completed",
          "finished": true,
          "wait": {
            "reason": "Upgraded",
            "message": "node runs Talos v1.13.2"
          },
          "startTime": "2026-12-01T09:53:20.000Z",
          "completionTime": "2026-12-01T09:56:00.000Z",
          "secondsCordoned": 150,
          "secondsTotal": 160,
          "talos": {
            "before": "v1.12.4",
            "after": "v1.13.2",
            "target": "v1.13.2"
          },
          "kubernetes": {
            "before": "v1.35.2",
            "after": "v1.35.2"
          },
          "ready": false
        },
        {
          "node": "worker-3",
          "job": "pausing-worker-3",
          "group": "workers",
          "phase": "Failed",
          "finished": true,
          "wait": {
            "reason": "UpgradeFailed",
            "message": "Talos refused the upgrade: error validating installer image"
          },
          "startTime": "2026-12-01T09:56:10.000Z",
          "completionTime": "2026-12-01T09:59:00.000Z",
          "secondsCordoned": 164,
          "secondsTotal": 170,
          "talos": {
            "before": "v1.12.4",
            "target": "v1.13.2"
          },
          "kubernetes": {}
        }
      ],
      "held": [],
      "skipped": []
    }
  ]
}
`,
  'failed text 60': `PatchPlan halting  Failed  1/3 nodes (1 failed)
    Talos v1.13.2
  failed: FailureBudgetExceeded: 1 node(s) failed,
    maxFailures 1: the plan stops
  workers [########xxxxxxx........] 1/3  failed 1  pending 1
  failed:
    worker-2  RebootTimeout: worker-2 did not come back on …
  node      Talos                result
  --------  -------------------  ----------------------
  worker-1  v1.12.4 → v1.13.2    Completed
  worker-2  v1.12.4 (unchanged)  Failed (left cordoned)`,
  'failed text 160': `PatchPlan halting  Failed  1/3 nodes (1 failed)  Talos v1.13.2
  failed: FailureBudgetExceeded: 1 node(s) failed, maxFailures 1: the plan stops
  workers [##########xxxxxxxxxx..........] 1/3  failed 1  pending 1
  failed:
    worker-2  RebootTimeout: worker-2 did not come back on Talos v1.13.2 within 10m
  node      group    Talos                Kubernetes           cordoned  total   result
  --------  -------  -------------------  -------------------  --------  ------  ----------------------
  worker-1  workers  v1.12.4 → v1.13.2    v1.35.2 (unchanged)  6m30s     6m40s   Completed
  worker-2  workers  v1.12.4 (unchanged)  v1.35.2 (unchanged)  23m10s    23m20s  Failed (left cordoned)`,
  'failed wide 60': `PatchPlan halting  Failed  1/3 nodes (1 failed)
    Talos v1.13.2  took 31m40s
  failed: FailureBudgetExceeded: 1 node(s) failed,
    maxFailures 1: the plan stops
  workers [###xx...]     1/3  running 0  failed 1  held 0  …
  failed:
    worker-2  RebootTimeout: worker-2 did not come back on …
  node      Talos                result
  --------  -------------------  ----------------------
  worker-1  v1.12.4 → v1.13.2    Completed
  worker-2  v1.12.4 (unchanged)  Failed (left cordoned)`,
  'failed wide 160': `PatchPlan halting  Failed  1/3 nodes (1 failed)  Talos v1.13.2  took 31m40s
  failed: FailureBudgetExceeded: 1 node(s) failed, maxFailures 1: the plan stops
  workers [##########xxxxxxxxxx..........]     1/3  running 0  failed 1  held 0  pending 1  skipped 0  slots 0/1
  failed:
    worker-2  RebootTimeout: worker-2 did not come back on Talos v1.13.2 within 10m
  node      group    Talos                Kubernetes           cordoned  total   result
  --------  -------  -------------------  -------------------  --------  ------  ----------------------
  worker-1  workers  v1.12.4 → v1.13.2    v1.35.2 (unchanged)  6m30s     6m40s   Completed
  worker-2  workers  v1.12.4 (unchanged)  v1.35.2 (unchanged)  23m10s    23m20s  Failed (left cordoned)`,
  'failed json': `{
  "kind": "KangalPatchStatus",
  "version": "v1",
  "time": "2026-12-01T10:00:00.000Z",
  "nodesReadable": true,
  "plans": [
    {
      "name": "halting",
      "created": "2026-12-01T09:10:00.000Z",
      "phase": "Failed",
      "finished": true,
      "paused": false,
      "template": false,
      "target": {
        "talosVersion": "v1.13.2"
      },
      "wait": {
        "reason": "FailureBudgetExceeded",
        "message": "1 node(s) failed, maxFailures 1: the plan stops"
      },
      "startTime": "2026-12-01T09:11:40.000Z",
      "completionTime": "2026-12-01T09:43:20.000Z",
      "secondsTotal": 1900,
      "counts": {
        "total": 3,
        "completed": 1,
        "running": 0,
        "pending": 1,
        "failed": 1,
        "held": 0,
        "skipped": 0
      },
      "groups": [
        {
          "name": "workers",
          "total": 3,
          "completed": 1,
          "running": 0,
          "pending": 1,
          "failed": 1,
          "held": 0,
          "skipped": 0,
          "concurrency": 1,
          "active": 0
        }
      ],
      "nodes": [
        {
          "node": "worker-1",
          "job": "halting-worker-1",
          "group": "workers",
          "phase": "Completed",
          "finished": true,
          "wait": {
            "reason": "Upgraded",
            "message": "node runs Talos v1.13.2"
          },
          "startTime": "2026-12-01T09:11:40.000Z",
          "completionTime": "2026-12-01T09:18:20.000Z",
          "secondsCordoned": 390,
          "secondsTotal": 400,
          "talos": {
            "before": "v1.12.4",
            "after": "v1.13.2",
            "target": "v1.13.2"
          },
          "kubernetes": {
            "before": "v1.35.2",
            "after": "v1.35.2"
          },
          "ready": true
        },
        {
          "node": "worker-2",
          "job": "halting-worker-2",
          "group": "workers",
          "phase": "Failed",
          "finished": true,
          "wait": {
            "reason": "RebootTimeout",
            "message": "worker-2 did not come back on Talos v1.13.2 within 10m"
          },
          "startTime": "2026-12-01T09:20:00.000Z",
          "completionTime": "2026-12-01T09:43:20.000Z",
          "secondsCordoned": 1390,
          "secondsTotal": 1400,
          "talos": {
            "before": "v1.12.4",
            "after": "v1.12.4",
            "target": "v1.13.2"
          },
          "kubernetes": {
            "before": "v1.35.2",
            "after": "v1.35.2"
          },
          "ready": false,
          "leftCordoned": true
        }
      ],
      "held": [],
      "skipped": []
    }
  ]
}
`,
  'held text 60': `PatchPlan holding  InProgress  2/4 nodes (1 held, 1 skipped)
    Talos v1.13.2
  NodesHeld: group workers waits for 1 held node(s):
    worker-2 (INC-4711: disk replacement); it goes on when
    the kangalpatch.ozalp.dk/hold annotation is removed, or…
  workers [#######----...] 2/4  held 1  pending 1  skipped 1
  holds (kangalpatch.ozalp.dk/hold):
    worker-2  held: INC-4711: disk replacement
    worker-4  skipped: retiring this week`,
  'held text 160': `PatchPlan holding  InProgress  2/4 nodes (1 held, 1 skipped)  Talos v1.13.2
  NodesHeld: group workers waits for 1 held node(s): worker-2 (INC-4711: disk replacement); it goes on when the kangalpatch.ozalp.dk/hold annotation is removed,
    or set to "skip"
  workers [###############--------.......] 2/4  held 1  pending 1  skipped 1
  holds (kangalpatch.ozalp.dk/hold):
    worker-2  held: INC-4711: disk replacement
    worker-4  skipped: retiring this week`,
  'held wide 60': `PatchPlan holding  InProgress  2/4 nodes (1 held, 1 skipped)
    Talos v1.13.2  running for 5m00s
  NodesHeld: group workers waits for 1 held node(s):
    worker-2 (INC-4711: disk replacement); it goes on when
    the kangalpatch.ozalp.dk/hold annotation is removed, or…
  workers [####--..]     2/4  running 0  failed 0  held 1  …
  holds (kangalpatch.ozalp.dk/hold):
    worker-2  held: INC-4711: disk replacement
    worker-4  skipped: retiring this week`,
  'held wide 160': `PatchPlan holding  InProgress  2/4 nodes (1 held, 1 skipped)  Talos v1.13.2  running for 5m00s
  NodesHeld: group workers waits for 1 held node(s): worker-2 (INC-4711: disk replacement); it goes on when the kangalpatch.ozalp.dk/hold annotation is removed,
    or set to "skip"
  workers [###############--------.......]     2/4  running 0  failed 0  held 1  pending 1  skipped 1  slots 0/2
  holds (kangalpatch.ozalp.dk/hold):
    worker-2  held: INC-4711: disk replacement
    worker-4  skipped: retiring this week`,
  'held json': `{
  "kind": "KangalPatchStatus",
  "version": "v1",
  "time": "2026-12-01T10:00:00.000Z",
  "nodesReadable": true,
  "plans": [
    {
      "name": "holding",
      "created": "2026-12-01T09:53:20.000Z",
      "phase": "InProgress",
      "finished": false,
      "paused": false,
      "template": false,
      "target": {
        "talosVersion": "v1.13.2"
      },
      "wait": {
        "reason": "NodesHeld",
        "message": "group workers waits for 1 held node(s): worker-2 (INC-4711: disk replacement); it goes on when the kangalpatch.ozalp.dk/hold annotation is removed, or set to \\"skip\\""
      },
      "startTime": "2026-12-01T09:55:00.000Z",
      "secondsTotal": 300,
      "counts": {
        "total": 4,
        "completed": 2,
        "running": 0,
        "pending": 1,
        "failed": 0,
        "held": 1,
        "skipped": 1
      },
      "groups": [
        {
          "name": "workers",
          "total": 4,
          "completed": 2,
          "running": 0,
          "pending": 1,
          "failed": 0,
          "held": 1,
          "skipped": 1,
          "concurrency": 2,
          "active": 0
        }
      ],
      "nodes": [
        {
          "node": "worker-1",
          "job": "holding-worker-1",
          "group": "workers",
          "phase": "Completed",
          "finished": true,
          "wait": {
            "reason": "Upgraded",
            "message": "node runs Talos v1.13.2"
          },
          "startTime": "2026-12-01T09:55:00.000Z",
          "completionTime": "2026-12-01T09:56:40.000Z",
          "secondsCordoned": 90,
          "secondsTotal": 100,
          "talos": {
            "before": "v1.12.4",
            "after": "v1.13.2",
            "target": "v1.13.2"
          },
          "kubernetes": {
            "before": "v1.35.2",
            "after": "v1.35.2"
          },
          "ready": true
        },
        {
          "node": "worker-3",
          "job": "holding-worker-3",
          "group": "workers",
          "phase": "Completed",
          "finished": true,
          "wait": {
            "reason": "Upgraded",
            "message": "node runs Talos v1.13.2"
          },
          "startTime": "2026-12-01T09:55:00.000Z",
          "completionTime": "2026-12-01T09:56:50.000Z",
          "secondsCordoned": 100,
          "secondsTotal": 110,
          "talos": {
            "before": "v1.12.4",
            "after": "v1.13.2",
            "target": "v1.13.2"
          },
          "kubernetes": {}
        }
      ],
      "held": [
        {
          "node": "worker-2",
          "reason": "INC-4711: disk replacement"
        }
      ],
      "skipped": [
        {
          "node": "worker-4",
          "reason": "retiring this week"
        }
      ]
    }
  ]
}
`,
  'completed text 60': `PatchPlan finished  Completed  2/2 nodes
    Talos v1.13.2, Kubernetes v1.36.3
  completed in 56m40s
    at 10:00:00 GMT+1 (09:00:00 UTC, 1h00m ago)
    all 2 node(s) done: 2 completed, 0 failed
  controlPlane [##############################] 1/1
  workers      [##############################] 1/1
  node      Talos              Kubernetes         result
  --------  -----------------  -----------------  ---------
  cp-1      v1.12.4 → v1.13.2  v1.35.2 → v1.36.3  Completed
  worker-1  v1.12.4 → v1.13.2  v1.35.2 → v1.36.3  Completed`,
  'completed text 160': `PatchPlan finished  Completed  2/2 nodes  Talos v1.13.2, Kubernetes v1.36.3
  completed in 56m40s; at 10:00:00 GMT+1 (09:00:00 UTC, 1h00m ago); all 2 node(s) done: 2 completed, 0 failed
  controlPlane [##############################] 1/1
  workers      [##############################] 1/1
  node      group         Talos              Kubernetes         cordoned  total   result
  --------  ------------  -----------------  -----------------  --------  ------  ---------
  cp-1      controlPlane  v1.12.4 → v1.13.2  v1.35.2 → v1.36.3  19m50s    20m00s  Completed
  worker-1  workers       v1.12.4 → v1.13.2  v1.35.2 → v1.36.3  34m50s    35m00s  Completed`,
  'completed wide 60': `PatchPlan finished  Completed  2/2 nodes
    Talos v1.13.2, Kubernetes v1.36.3  took 56m40s
  completed in 56m40s
    at 10:00:00 GMT+1 (09:00:00 UTC, 1h00m ago)
    all 2 node(s) done: 2 completed, 0 failed
  controlPlane [########]     1/1  running 0  failed 0  hel…
  workers      [########]     1/1  running 0  failed 0  hel…
  node      Talos              Kubernetes         result
  --------  -----------------  -----------------  ---------
  cp-1      v1.12.4 → v1.13.2  v1.35.2 → v1.36.3  Completed
  worker-1  v1.12.4 → v1.13.2  v1.35.2 → v1.36.3  Completed`,
  'completed wide 160': `PatchPlan finished  Completed  2/2 nodes  Talos v1.13.2, Kubernetes v1.36.3  took 56m40s
  completed in 56m40s; at 10:00:00 GMT+1 (09:00:00 UTC, 1h00m ago); all 2 node(s) done: 2 completed, 0 failed
  controlPlane [##############################]     1/1  running 0  failed 0  held 0  pending 0  skipped 0  slots 0/1
  workers      [##############################]     1/1  running 0  failed 0  held 0  pending 0  skipped 0  slots 0/1
  node      group         Talos              Kubernetes         cordoned  total   result
  --------  ------------  -----------------  -----------------  --------  ------  ---------
  cp-1      controlPlane  v1.12.4 → v1.13.2  v1.35.2 → v1.36.3  19m50s    20m00s  Completed
  worker-1  workers       v1.12.4 → v1.13.2  v1.35.2 → v1.36.3  34m50s    35m00s  Completed`,
  'completed json': `{
  "kind": "KangalPatchStatus",
  "version": "v1",
  "time": "2026-12-01T10:00:00.000Z",
  "nodesReadable": true,
  "plans": [
    {
      "name": "finished",
      "created": "2026-12-01T08:00:00.000Z",
      "phase": "Completed",
      "finished": true,
      "paused": false,
      "template": false,
      "target": {
        "talosVersion": "v1.13.2",
        "kubernetesVersion": "v1.36.3"
      },
      "wait": {
        "reason": "Completed",
        "message": "all 2 node(s) done: 2 completed, 0 failed"
      },
      "startTime": "2026-12-01T08:03:20.000Z",
      "completionTime": "2026-12-01T09:00:00.000Z",
      "secondsTotal": 3400,
      "counts": {
        "total": 2,
        "completed": 2,
        "running": 0,
        "pending": 0,
        "failed": 0,
        "held": 0,
        "skipped": 0
      },
      "groups": [
        {
          "name": "controlPlane",
          "total": 1,
          "completed": 1,
          "running": 0,
          "pending": 0,
          "failed": 0,
          "held": 0,
          "skipped": 0,
          "concurrency": 1,
          "active": 0
        },
        {
          "name": "workers",
          "total": 1,
          "completed": 1,
          "running": 0,
          "pending": 0,
          "failed": 0,
          "held": 0,
          "skipped": 0,
          "concurrency": 1,
          "active": 0
        }
      ],
      "nodes": [
        {
          "node": "cp-1",
          "job": "finished-cp-1",
          "group": "controlPlane",
          "phase": "Completed",
          "finished": true,
          "wait": {
            "reason": "Upgraded",
            "message": "node runs Talos v1.13.2"
          },
          "startTime": "2026-12-01T08:03:20.000Z",
          "completionTime": "2026-12-01T08:23:20.000Z",
          "secondsCordoned": 1190,
          "secondsTotal": 1200,
          "talos": {
            "before": "v1.12.4",
            "after": "v1.13.2",
            "target": "v1.13.2"
          },
          "kubernetes": {
            "before": "v1.35.2",
            "after": "v1.36.3",
            "target": "v1.36.3"
          },
          "ready": true
        },
        {
          "node": "worker-1",
          "job": "finished-worker-1",
          "group": "workers",
          "phase": "Completed",
          "finished": true,
          "wait": {
            "reason": "Upgraded",
            "message": "node runs Talos v1.13.2"
          },
          "startTime": "2026-12-01T08:25:00.000Z",
          "completionTime": "2026-12-01T09:00:00.000Z",
          "secondsCordoned": 2090,
          "secondsTotal": 2100,
          "talos": {
            "before": "v1.12.4",
            "after": "v1.13.2",
            "target": "v1.13.2"
          },
          "kubernetes": {
            "before": "v1.35.2",
            "after": "v1.36.3",
            "target": "v1.36.3"
          },
          "ready": true
        }
      ],
      "held": [],
      "skipped": []
    }
  ]
}
`,
};
