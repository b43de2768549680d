#!/usr/bin/env node
// The mcpstdio command, from npm: it runs the Go binary of the package built
// for this system (@mcpstdio/<platform>-<arch>, which npm installed as an
// optional dependency of this one, chosen by its "os" and "cpu"), with this
// process's arguments and standard streams, passes SIGINT, SIGTERM and
// SIGHUP on to it, and exits as it did. Nothing is downloaded: the binary
// came with the install.
'use strict';

const { spawn } = require('child_process');
const os = require('os');

const packages = {
  'linux x64': '@mcpstdio/linux-x64',
  'linux arm64': '@mcpstdio/linux-arm64',
  'darwin x64': '@mcpstdio/darwin-x64',
  'darwin arm64': '@mcpstdio/darwin-arm64',
  'win32 x64': '@mcpstdio/win32-x64',
  'win32 arm64': '@mcpstdio/win32-arm64',
};

function fail(message) {
  process.stderr.write('mcpstdio: ' + message + '\n');
  process.exit(1);
}

function binary() {
  const system = `${process.platform} ${process.arch}`;
  const pkg = packages[system];
  if (!pkg) {
    fail(`no binary for ${system} in the npm packages (there are: ${Object.keys(packages).join(', ')}); ` +
      'with Go, build it: go install github.com/mcpstdio/mcpstdio/cmd/mcpstdio@latest');
  }
  const exe = process.platform === 'win32' ? 'bin/mcpstdio.exe' : 'bin/mcpstdio';
  try {
    return require.resolve(`${pkg}/${exe}`);
  } catch (err) {
    fail(`the package ${pkg}, which holds the binary for ${system}, is not installed. ` +
      'npm installs it as an optional dependency of mcpstdio: install again without --omit=optional ' +
      '(or --no-optional), and do not copy node_modules from another system.');
  }
}

const exe = binary();
const child = spawn(exe, process.argv.slice(2), { stdio: 'inherit', windowsHide: true });
const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
for (const signal of signals) {
  process.on(signal, () => child.kill(signal));
}
child.on('error', (err) => fail(`cannot run ${exe}: ${err.message}`));
child.on('exit', (code, signal) => {
  if (signal === null) {
    process.exit(code);
  }
  // Die of the same signal, so that whoever started this sees what
  // ended the binary; exit 128+n if it is one that does not end us.
  for (const s of signals) {
    process.removeAllListeners(s);
  }
  process.kill(process.pid, signal);
  process.exit(128 + (os.constants.signals[signal] || 0));
});
