// The large bundle: the small app and every module of lodash-es, so the
// profile holds hundreds of modules' hooks and a long CPU profile.
export * from 'lodash-es';
export { html } from './index.js';
