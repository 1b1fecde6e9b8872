// Whether a finished ImageService.Pull downloaded anything, from its progress (controller/talos/pull-progress.ts).
import assert from 'node:assert/strict';
import { pulledNothing } from '../../../controller/talos/pull-progress.js';

describe('talos: pulledNothing', function () {
  // Talos pulls WithSkipIfAlreadyPulled (internal/app/images/images.go): an image the namespace holds by
  // that name is found before any progress reporter starts (internal/pkg/containers/image/pull.go), so
  // the stream carries only the name. A pre-pulled installer looks like this on a real node.
  it('no progress at all: the pull was skipped, the image was there', function () {
    assert.equal(pulledNothing([]), true);
  });

  // progress/pull_progress.go: layers in the content store before the pull report ALREADY_EXISTS, and
  // EXTRACTING/EXTRACT_COMPLETE while unpacked for a namespace that did not have them.
  it('only layers the containerd held, unpacked for this namespace: nothing downloaded', function () {
    assert.equal(pulledNothing(['ALREADY_EXISTS', 'ALREADY_EXISTS']), true);
    assert.equal(pulledNothing(['ALREADY_EXISTS', 'EXTRACTING', 'EXTRACT_COMPLETE']), true);
  });

  it('any download, or a status the client does not know, is a download', function () {
    assert.equal(pulledNothing(['ALREADY_EXISTS', 'DOWNLOADING', 'DOWNLOAD_COMPLETE', 'EXTRACT_COMPLETE']), false);
    assert.equal(pulledNothing(['DOWNLOAD_COMPLETE']), false);
    assert.equal(pulledNothing(['UNKNOWN(9)']), false);
  });
});
