// Bundles the small app in src/ with webpack's ProfilingPlugin, which
// writes a Chrome trace of the compiler's hooks and a CPU profile.
'use strict';
const path = require('node:path');
const webpack = require('webpack');

module.exports = {
  mode: 'production',
  context: __dirname,
  entry: process.env.WEBPACK_ENTRY || './src/index.js',
  output: { path: path.resolve(process.env.WEBPACK_OUT || 'dist'), filename: 'bundle.js' },
  plugins: [new webpack.debug.ProfilingPlugin({ outputPath: path.resolve(process.env.WEBPACK_PROFILE || 'events.json') })],
};
